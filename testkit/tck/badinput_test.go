package tck_test

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/reactivex/rxgo/v2"

	bulkhead "github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/flowable"
	"github.com/rxbulkhead/bulkhead/testkit"
)

// The tests in this file back the reactive rows of the table of bad inputs
// in docs/reliability.md, one test per row, named after it.

func panicOf(f func()) (msg string) {
	defer func() {
		if v := recover(); v != nil {
			msg = fmt.Sprint(v)
		}
	}()
	f()
	return ""
}

func TestBadInputNilSubscriberPanicsNamingTheRule(t *testing.T) {
	sem := newPartner(t, bulkhead.Config{MaxConcurrentCalls: 1})
	pubs := map[string]flowable.Publisher[int]{"Bulkhead": flowable.Bulkhead(sem, flowable.Range(0, 3))}
	for _, s := range sources() {
		pubs[s.name] = s.pub()
	}
	for name, p := range pubs {
		if msg := panicOf(func() { p.Subscribe(nil) }); msg != "flowable: Subscribe called with a nil Subscriber (rule 1.9)" {
			t.Errorf("%s.Subscribe(nil): panic %q", name, msg)
		}
	}
	if m := sem.Metrics(); m.InFlightCalls != 0 || m.QueuedCalls != 0 {
		t.Errorf("Subscribe(nil) touched the bulkhead: %+v", m)
	}
}

func TestBadInputRequestZeroOrNegative(t *testing.T) {
	for _, n := range []int64{0, -5, math.MinInt64} {
		ts := testkit.NewTestSubscriber[int](testkit.InitialRequest(0))
		flowable.Range(0, 3).Subscribe(ts)
		ts.Request(n)
		ts.AssertError(t, flowable.ErrNonPositiveRequest)
		ts.AssertNoValues(t)
		want := fmt.Sprintf("reactive streams rule 3.9 violated: Request(n) needs n > 0, got Request(%d)", n)
		if err := ts.Err(); err == nil || err.Error() != want {
			t.Errorf("Request(%d): OnError(%v), want %q", n, err, want)
		}
	}
}

func TestBadInputRequestZeroWhilePermitPending(t *testing.T) {
	sem := newPartner(t, bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Hour, MaxQueuedCalls: bulkhead.Unbounded})
	if !sem.TryAcquirePermission() {
		t.Fatal("no free permit")
	}
	subscribed := false
	src := flowable.Defer(func() flowable.Publisher[int] {
		subscribed = true
		return flowable.Range(0, 3)
	})
	ts := testkit.NewTestSubscriber[int](testkit.InitialRequest(0))
	flowable.Bulkhead(sem, src).Subscribe(ts)
	ts.Request(0)
	ts.AssertError(t, flowable.ErrNonPositiveRequest)
	if m := sem.Metrics(); m.QueuedCalls != 0 {
		t.Errorf("the pending acquisition was not withdrawn: %+v", m)
	}
	sem.FinishCall() // the permit must not go to the withdrawn subscriber
	if subscribed {
		t.Error("the source was subscribed after Request(0) withdrew the acquisition")
	}
	ts.AssertNoViolations(t)
}

func TestBadInputDeferFactoryReturnsNil(t *testing.T) {
	ts := testkit.NewTestSubscriber[int]()
	flowable.Defer(func() flowable.Publisher[int] { return nil }).Subscribe(ts)
	if err := ts.Err(); err == nil || err.Error() != "flowable: Defer: factory returned a nil Publisher" {
		t.Errorf("OnError(%v)", err)
	}
	ts.AssertNoViolations(t)
}

func TestBadInputFromObservableItemOfWrongType(t *testing.T) {
	ts := testkit.NewTestSubscriber[int]()
	flowable.FromObservable[int](rxgo.Just("walmart")()).Subscribe(ts)
	if !ts.Await(10 * time.Second) {
		t.Fatal("no terminal signal")
	}
	if err := ts.Err(); err == nil || err.Error() != "flowable: FromObservable: item of type string is not a int" {
		t.Errorf("OnError(%v)", err)
	}
	ts.AssertNoViolations(t)
}

func TestBadInputDemandAboveMaxInt64Saturates(t *testing.T) {
	ts := testkit.NewTestSubscriber[int](testkit.InitialRequest(0))
	flowable.Bulkhead(newPartner(t, bulkhead.Config{MaxConcurrentCalls: 1}), flowable.Range(0, 3)).Subscribe(ts)
	ts.Request(math.MaxInt64)
	ts.Request(math.MaxInt64)
	ts.AssertResult(t, 0, 1, 2)
}

func TestBadInputNilArgumentsOfOperatorsAndSources(t *testing.T) {
	sem := newPartner(t, bulkhead.DefaultConfig())
	for call, want := range map[string]string{
		"Bulkhead(nil, src)":  "flowable: Bulkhead called with a nil bulkhead.Bulkhead",
		"Bulkhead(b, nil)":    "flowable: Bulkhead called with a nil Publisher",
		"Error(nil)":          "flowable: Error called with a nil error",
		"Defer(nil)":          "flowable: Defer called with a nil factory",
		"Create(nil)":         "flowable: Create called with a nil producer",
		"FromObservable(nil)": "flowable: FromObservable called with a nil Observable",
		"ToObservable(nil)":   "flowable: ToObservable called with a nil Publisher",
	} {
		f := map[string]func(){
			"Bulkhead(nil, src)":  func() { flowable.Bulkhead[int](nil, flowable.Empty[int]()) },
			"Bulkhead(b, nil)":    func() { flowable.Bulkhead[int](sem, nil) },
			"Error(nil)":          func() { flowable.Error[int](nil) },
			"Defer(nil)":          func() { flowable.Defer[int](nil) },
			"Create(nil)":         func() { flowable.Create[int](nil) },
			"FromObservable(nil)": func() { flowable.FromObservable[int](nil) },
			"ToObservable(nil)":   func() { flowable.ToObservable[int](nil) },
		}[call]
		if msg := panicOf(f); msg != want {
			t.Errorf("%s: panic %q, want %q", call, msg, want)
		}
	}
}

func TestBadInputRangeCountNegativeOrOverflowing(t *testing.T) {
	if msg := panicOf(func() { flowable.Range(0, -1) }); msg != "flowable: Range: count must be >= 0, got -1" {
		t.Errorf("Range(0, -1): panic %q", msg)
	}
	if msg := panicOf(func() { flowable.Range(math.MaxInt, 2) }); !strings.Contains(msg, "last value overflows int") {
		t.Errorf("Range(MaxInt, 2): panic %q", msg)
	}
}
