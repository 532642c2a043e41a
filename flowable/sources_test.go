package flowable_test

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	bulkhead "github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/flowable"
)

func TestRangeEmitsOnlyWhatIsRequested(t *testing.T) {
	r := newRecorder[int](t, 0)
	flowable.Range(10, 5).Subscribe(r)
	if r.count() != 0 {
		t.Fatal("emitted without demand")
	}
	r.Request(2)
	if items, _, _ := r.snapshot(); !slices.Equal(items, []int{10, 11}) {
		t.Fatalf("after Request(2): %v", items)
	}
	r.Request(3)
	r.wait()
	items, err, completed := r.snapshot()
	if !slices.Equal(items, seq(10, 5)) || err != nil || !completed {
		t.Fatalf("got %v, %v, completed=%v", items, err, completed)
	}
}

func TestRequestInsideOnNextDoesNotRecurse(t *testing.T) {
	const n = 100000 // deep enough to overflow the stack if each Request recursed
	r := newRecorder[int](t, 1)
	depth, maxDepth := 0, 0
	r.onNext = func(r *recorder[int], _ int) {
		depth++
		maxDepth = max(maxDepth, depth)
		r.Request(1)
		depth--
	}
	flowable.Range(0, n).Subscribe(r)
	r.wait()
	if r.count() != n || maxDepth != 1 {
		t.Fatalf("got %d items, max OnNext nesting %d; want %d and 1", r.count(), maxDepth, n)
	}
}

func TestDemandSaturatesAtMaxInt64(t *testing.T) {
	// Requests made while the emission loop runs pile up in the demand
	// word: they must saturate, not wrap into negative demand.
	r := newRecorder[int](t, 1)
	r.onNext = func(r *recorder[int], v int) {
		if v == 0 {
			r.Request(math.MaxInt64 - 1)
			r.Request(math.MaxInt64)
		}
	}
	flowable.Range(0, 3).Subscribe(r)
	r.wait()
	if items, _, completed := r.snapshot(); len(items) != 3 || !completed {
		t.Fatalf("got %v completed=%v", items, completed)
	}

	var requested int64
	flowable.Create(func(e flowable.Emitter[int]) { requested = e.Requested() }).Subscribe(flowable.Funcs[int]{
		Start: func(s flowable.Subscription) {
			s.Request(math.MaxInt64 - 1)
			s.Request(2)
		},
	})
	if requested != math.MaxInt64 {
		t.Fatalf("Create emitter demand %d, want math.MaxInt64", requested)
	}
}

func TestNonPositiveRequestSignalsRule39Error(t *testing.T) {
	sources := map[string]flowable.Publisher[int]{
		"Range":     flowable.Range(0, 10),
		"FromSlice": flowable.FromSlice([]int{1, 2}),
		"Never":     flowable.Never[int](),
		"Create":    flowable.Create(func(flowable.Emitter[int]) {}),
	}
	for name, p := range sources {
		t.Run(name, func(t *testing.T) {
			r := newRecorder[int](t, 0)
			p.Subscribe(r)
			r.Request(-3)
			r.wait()
			_, err, _ := r.snapshot()
			if !errors.Is(err, flowable.ErrNonPositiveRequest) || !strings.Contains(err.Error(), "3.9") ||
				!strings.Contains(err.Error(), "Request(-3)") {
				t.Fatalf("error %v: want ErrNonPositiveRequest quoting rule 3.9 and Request(-3)", err)
			}
			r.Request(5) // nothing after the terminal signal
			r.snapshot()
		})
	}
}

func TestCancelStopsEmission(t *testing.T) {
	r := newRecorder[int](t, math.MaxInt64)
	r.onNext = func(r *recorder[int], v int) {
		if v == 3 {
			r.Cancel()
		}
	}
	flowable.Range(0, 100).Subscribe(r)
	items, err, completed := r.snapshot()
	if !slices.Equal(items, seq(0, 4)) || err != nil || completed {
		t.Fatalf("after cancel at 3: %v, %v, completed=%v", items, err, completed)
	}
}

func TestEmptyRangeCompletesWithoutDemand(t *testing.T) {
	r := newRecorder[int](t, 0)
	flowable.Range(5, 0).Subscribe(r)
	r.wait()
	if _, _, completed := r.snapshot(); !completed {
		t.Fatal("Range(5, 0) did not complete")
	}
}

func TestJustAndFromSliceReplayForEachSubscriber(t *testing.T) {
	p := flowable.Just("a", "b")
	for range 2 {
		r := newRecorder[string](t, 10)
		p.Subscribe(r)
		r.wait()
		if items, _, _ := r.snapshot(); !slices.Equal(items, []string{"a", "b"}) {
			t.Fatalf("got %v", items)
		}
	}
}

func TestEmptyErrorNeverSignalAsDocumented(t *testing.T) {
	boom := errors.New("boom")

	e := newRecorder[int](t, 0)
	flowable.Empty[int]().Subscribe(e)
	if _, _, completed := e.snapshot(); !completed {
		t.Fatal("Empty did not complete")
	}

	f := newRecorder[int](t, 0)
	flowable.Error[int](boom).Subscribe(f)
	if _, err, _ := f.snapshot(); err != boom {
		t.Fatalf("Error signalled %v", err)
	}

	n := newRecorder[int](t, 5)
	flowable.Never[int]().Subscribe(n)
	n.Cancel()
	if items, err, completed := n.snapshot(); len(items) != 0 || err != nil || completed {
		t.Fatal("Never signalled something")
	}
}

func TestDeferCallsFactoryPerSubscription(t *testing.T) {
	calls := 0
	p := flowable.Defer(func() flowable.Publisher[int] {
		calls++
		return flowable.Just(calls)
	})
	for want := 1; want <= 2; want++ {
		r := newRecorder[int](t, 1)
		p.Subscribe(r)
		r.wait()
		if items, _, _ := r.snapshot(); !slices.Equal(items, []int{want}) {
			t.Fatalf("subscription %d got %v", want, items)
		}
	}
}

func TestDeferNilPublisherIsAnError(t *testing.T) {
	r := newRecorder[int](t, 1)
	flowable.Defer(func() flowable.Publisher[int] { return nil }).Subscribe(r)
	if _, err, _ := r.snapshot(); err == nil || !strings.Contains(err.Error(), "nil Publisher") {
		t.Fatalf("got %v", err)
	}
}

func TestProgrammerErrorsPanicNamingTheRule(t *testing.T) {
	cases := map[string]func(){
		"Range negative count":  func() { flowable.Range(0, -1) },
		"Range overflow":        func() { flowable.Range(math.MaxInt, 2) },
		"nil subscriber":        func() { flowable.Just(1).Subscribe(nil) },
		"Error nil":             func() { flowable.Error[int](nil) },
		"Defer nil":             func() { flowable.Defer[int](nil) },
		"Create nil":            func() { flowable.Create[int](nil) },
		"Bulkhead nil bulkhead": func() { flowable.Bulkhead(nil, flowable.Just(1)) },
		"Bulkhead nil *Semaphore": func() {
			flowable.Bulkhead((*bulkhead.Semaphore)(nil), flowable.Just(1))
		},
		"Bulkhead nil source": func() {
			b, _ := bulkhead.New("b", bulkhead.DefaultConfig())
			flowable.Bulkhead[int](b, nil)
		},
		"FromObservable nil": func() { flowable.FromObservable[int](nil) },
		"ToObservable nil":   func() { flowable.ToObservable[int](nil) },
	}
	for name, f := range cases {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if msg, _ := recover().(string); !strings.HasPrefix(msg, "flowable: ") {
					t.Fatalf("panic %q, want a message starting with flowable:", msg)
				}
			}()
			f()
		})
	}
}

func TestFuncsRequestsUnboundedByDefault(t *testing.T) {
	var got []int
	done := false
	flowable.Range(1, 3).Subscribe(flowable.Funcs[int]{
		Next:     func(v int) { got = append(got, v) },
		Complete: func() { done = true },
	})
	if !slices.Equal(got, []int{1, 2, 3}) || !done {
		t.Fatalf("got %v done=%v", got, done)
	}
}

func TestFuncsStartDecidesDemand(t *testing.T) {
	var sub flowable.Subscription
	var got []int
	flowable.Range(1, 3).Subscribe(flowable.Funcs[int]{
		Start: func(s flowable.Subscription) { sub = s },
		Next:  func(v int) { got = append(got, v) },
	})
	if len(got) != 0 {
		t.Fatal("Funcs requested although Start was set")
	}
	sub.Request(1)
	if !slices.Equal(got, []int{1}) {
		t.Fatalf("got %v", got)
	}
}
