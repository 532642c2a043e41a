package operator_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/reactivex/rxgo/v2"

	bulkhead "github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/completable"
	"github.com/rxbulkhead/bulkhead/flowable"
	"github.com/rxbulkhead/bulkhead/operator"
)

// items observes src to its end and returns its items.
func items(src rxgo.Iterable) []rxgo.Item {
	var got []rxgo.Item
	for it := range src.Observe() {
		got = append(got, it)
	}
	return got
}

// TestApplyWrapsEachTypeAsTheSameInterface applies a full bulkhead to a
// source of each type, including rxgo's own concrete types: the result has
// the source's interface type and is rejected when observed, which shows
// that the bulkhead was applied.
func TestApplyWrapsEachTypeAsTheSameInterface(t *testing.T) {
	b, _ := newBulkhead(t, noWait)
	op := operator.Of(b)
	b.TryAcquirePermission()
	defer b.ReleasePermission()
	full := func(t *testing.T, its []rxgo.Item) {
		t.Helper()
		if len(its) != 1 || !errors.Is(its[0].E, bulkhead.ErrBulkheadFull) {
			t.Fatalf("got %v, want one ErrBulkheadFull item", its)
		}
	}
	t.Run("*rxgo.ObservableImpl", func(t *testing.T) {
		got, err := op.Apply(rxgo.Just(1)())
		if err != nil {
			t.Fatal(err)
		}
		full(t, items(got.(rxgo.Observable)))
	})
	t.Run("*rxgo.SingleImpl", func(t *testing.T) {
		got, err := op.Apply(rxgo.Just(1)().Count())
		if err != nil {
			t.Fatal(err)
		}
		full(t, items(got.(rxgo.Single)))
	})
	t.Run("*rxgo.OptionalSingleImpl", func(t *testing.T) {
		got, err := op.Apply(rxgo.Just(1)().First())
		if err != nil {
			t.Fatal(err)
		}
		full(t, items(got.(rxgo.OptionalSingle)))
	})
	t.Run("completable.Completable", func(t *testing.T) {
		got, err := op.Apply(completable.Complete())
		if err != nil {
			t.Fatal(err)
		}
		if err := completable.Await(context.Background(), got.(completable.Completable)); !errors.Is(err, bulkhead.ErrBulkheadFull) {
			t.Fatalf("got %v, want ErrBulkheadFull", err)
		}
	})
	t.Run("flowable.Publisher[any]", func(t *testing.T) {
		got, err := op.Apply(flowable.Just[any](1))
		if err != nil {
			t.Fatal(err)
		}
		var gotErr error
		got.(flowable.Publisher[any]).Subscribe(flowable.Funcs[any]{Error: func(err error) { gotErr = err }})
		if !errors.Is(gotErr, bulkhead.ErrBulkheadFull) {
			t.Fatalf("got %v, want ErrBulkheadFull", gotErr)
		}
	})
}

func TestApplyPassesValuesThroughAnOpenBulkhead(t *testing.T) {
	b, ev := newBulkhead(t, noWait)
	got, err := operator.Of(b).Apply(rxgo.Just(1, 2, 3)())
	if err != nil {
		t.Fatal(err)
	}
	its := items(got.(rxgo.Observable))
	if len(its) != 3 || its[0].V != 1 || its[2].V != 3 {
		t.Fatalf("got %v, want 1, 2, 3", its)
	}
	if ev.Count(bulkhead.CallFinished) != 1 {
		t.Fatal("want the permit back with FinishCall")
	}
}

// both is an rxgo.Observable (embedded) that is also a Completable.
type both struct{ rxgo.Observable }

func (both) Subscribe(o completable.Observer) { completable.Complete().Subscribe(o) }

// iterableOnly is an rxgo.Iterable and nothing more.
type iterableOnly struct{}

func (iterableOnly) Observe(...rxgo.Option) <-chan rxgo.Item { return nil }

func TestApplyRefusesUnsupportedSources(t *testing.T) {
	b, ev := newBulkhead(t, noWait)
	op := operator.Of(b)
	for _, tc := range []struct {
		name string
		src  any
		hint string // the message must contain it
	}{
		{"nil", nil, "nil"},
		{"int", 42, "int is none of rxgo.Observable"},
		{"channel", make(chan rxgo.Item), "chan rxgo.Item is none of"},
		{"rxgo.Iterable only", iterableOnly{}, "operator_test.iterableOnly is none of"},
		{"func", func() error { return nil }, "is none of"},
		{"Publisher[int]", flowable.Just(1), "is a flowable.Publisher[int]; Apply handles only flowable.Publisher[any]"},
		{"Publisher[string]", flowable.Just("x"), "operator.Flowable(op, src)"},
		{"Observable and Completable", both{rxgo.Just(1)()}, "ambiguous, it is both rxgo.Observable and completable.Completable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := op.Apply(tc.src)
			if !errors.Is(err, operator.ErrUnsupportedSource) {
				t.Fatalf("Apply(%T) error = %v, want ErrUnsupportedSource", tc.src, err)
			}
			if !strings.Contains(err.Error(), tc.hint) {
				t.Fatalf("error %q does not say %q", err, tc.hint)
			}
			if got != nil {
				t.Fatalf("Apply returned %v with its error, want nil", got)
			}
		})
	}
	if ev.Count(bulkhead.CallPermitted) != 0 {
		t.Fatal("Apply took a permit")
	}
}

func TestApplyTakesNoPermitUntilSubscribed(t *testing.T) {
	b, ev := newBulkhead(t, noWait)
	op := operator.Of(b)
	for _, src := range []any{rxgo.Just(1)(), completable.Complete(), flowable.Just[any](1)} {
		if _, err := op.Apply(src); err != nil {
			t.Fatal(err)
		}
	}
	if ev.Count(bulkhead.CallPermitted) != 0 {
		t.Fatal("building a pipeline took a permit")
	}
}

func TestTypedMethodsDelegateToTheirPackages(t *testing.T) {
	b, ev := newBulkhead(t, noWait)
	op := operator.Of(b)
	if op.Bulkhead() != b {
		t.Fatal("Bulkhead() is not the bulkhead given to Of")
	}
	if its := items(op.Observable(rxgo.Just(1, 2)())); len(its) != 2 || its[1].V != 2 {
		t.Fatalf("Observable: %v", its)
	}
	if it, err := op.Single(rxgo.Just(1, 2)().Count()).Get(); err != nil || it.V != int64(2) {
		t.Fatalf("Single: %v, %v", it, err)
	}
	if it, err := op.Maybe(rxgo.Just(7)().First()).Get(); err != nil || it.V != 7 {
		t.Fatalf("Maybe: %v, %v", it, err)
	}
	if err := completable.Await(context.Background(), op.Completable(completable.Error(errBoom))); err != errBoom {
		t.Fatalf("Completable: %v", err)
	}
	var sum int
	operator.Flowable(op, flowable.Range(1, 3)).Subscribe(flowable.Funcs[int]{Next: func(v int) { sum += v }})
	if sum != 6 {
		t.Fatalf("Flowable: sum %d, want 6", sum)
	}
	if got := ev.Count(bulkhead.CallFinished); got != 5 {
		t.Fatalf("%d calls gave their permit back with FinishCall, want 5", got)
	}
}

func TestMisuseNamesTheRule(t *testing.T) {
	var zero operator.Op
	for name, tc := range map[string]struct {
		f    func()
		want string
	}{
		"Of(nil)":            {func() { operator.Of(nil) }, "Of called with a nil bulkhead.Bulkhead"},
		"Of(nil *Semaphore)": {func() { operator.Of((*bulkhead.Semaphore)(nil)) }, "Of called with a nil bulkhead.Bulkhead"},
		"zero Op Apply":      {func() { _, _ = zero.Apply(rxgo.Just(1)()) }, "zero Op"},
		"zero Op Observable": {func() { zero.Observable(rxgo.Just(1)()) }, "zero Op"},
		"zero Op Flowable":   {func() { operator.Flowable(zero, flowable.Just(1)) }, "zero Op"},
		"zero Op Bulkhead":   {func() { zero.Bulkhead() }, "zero Op"},
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				msg, _ := recover().(string)
				if !strings.Contains(msg, tc.want) {
					t.Fatalf("panic %q, want one mentioning %q", msg, tc.want)
				}
			}()
			tc.f()
		})
	}
}
