package callstats

import (
	"sync"
	"testing"
	"time"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/testkit"
)

// A budget of 2 permits: interactive calls wait up to a second, batch
// calls never wait.
func newTestBudget(t *testing.T) (*bulkhead.Budget, *testkit.VirtualClock) {
	t.Helper()
	clk := testkit.NewVirtualClock(time.Unix(0, 0))
	b, err := bulkhead.NewBudget("hub", bulkhead.BudgetConfig{
		Size:           2,
		MaxQueuedCalls: bulkhead.Unbounded,
		Classes: []bulkhead.ClassConfig{
			{Name: "interactive", MaxWaitDuration: time.Second, MaxQueuedCalls: bulkhead.Unbounded},
			{Name: "batch"},
		},
	}, bulkhead.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	return b, clk
}

func TestBudgetWatchCountsEveryKindReasonWeightAndWaitPerClass(t *testing.T) {
	b, clk := newTestBudget(t)
	w := NewBudgetWatch(b, []time.Duration{100 * time.Millisecond, time.Second}, nil)
	defer w.Close()
	p, err := b.Flow("walmart", bulkhead.PartnerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	interactive, _ := b.Class("interactive")
	batch, _ := b.Class("batch")

	heavy := p.Call(interactive, 2)
	if !heavy.AcquirePermissionAsync().Granted() { // permitted at once, 2 permits
		t.Fatal("first call not granted")
	}
	queued := p.Call(interactive, 1).AcquirePermissionAsync() // waits
	expiring := p.Call(interactive, 1).AcquirePermissionAsync()
	cancelled := p.Call(interactive, 1).AcquirePermissionAsync()
	if !cancelled.Cancel() {
		t.Fatal("cancel lost")
	}
	if p.Call(batch, 1).AcquirePermissionAsync().Granted() { // no_wait
		t.Fatal("batch call granted with no permit free")
	}
	if p.Call(batch, 3).AcquirePermissionAsync().Err() == nil { // too_heavy
		t.Fatal("call of weight 3 not rejected by a budget of 2")
	}
	clk.Advance(300 * time.Millisecond)
	heavy.FinishCall() // finished; grants queued and expiring after 300 ms
	if !queued.Granted() || !expiring.Granted() {
		t.Fatal("waiters not granted")
	}
	late := p.Call(interactive, 1).AcquirePermissionAsync()
	clk.Advance(time.Second) // wait_timeout after 1 s
	if late.Err() == nil {
		t.Fatal("late waiter not timed out")
	}

	in := w.Class("interactive")
	if got := [4]uint64{in.Count(bulkhead.CallPermitted), in.Count(bulkhead.CallRejected), in.Count(bulkhead.CallFinished), in.Count(bulkhead.CallCancelled)}; got != [4]uint64{3, 1, 1, 1} {
		t.Errorf("interactive permitted, rejected, finished, cancelled = %v, want [3 1 1 1]", got)
	}
	if got := in.Permits.Load(); got != 4 {
		t.Errorf("interactive permits granted = %d, want 4 (2+1+1)", got)
	}
	if n, sum, cum := in.Granted.Snapshot(); n != 3 || sum != 600*time.Millisecond || cum[0] != 1 || cum[1] != 3 {
		t.Errorf("interactive granted waits: count %d sum %v cumulative %v, want 3, 600ms, [1 3]", n, sum, cum)
	}
	if n, sum, cum := in.Rejected.Snapshot(); n != 1 || sum != time.Second || cum[1] != 1 {
		t.Errorf("interactive rejected waits: count %d sum %v cumulative %v, want 1, 1s, [0 1]", n, sum, cum)
	}
	ba := w.Class("batch")
	var reasons [len(BudgetReasons)]uint64
	for i := range reasons {
		reasons[i] = ba.Rejections[i].Load() + in.Rejections[i].Load()
	}
	if reasons != [len(BudgetReasons)]uint64{1, 0, 1, 0, 1} {
		t.Errorf("rejections by reason %v = %v, want no_wait 1, wait_timeout 1, too_heavy 1", BudgetReasons, reasons)
	}
	if ba.Rejections[4].Load() != 1 || ba.Count(bulkhead.CallRejected) != 2 {
		t.Errorf("batch: too_heavy %d, rejected %d; want 1, 2", ba.Rejections[4].Load(), ba.Count(bulkhead.CallRejected))
	}
	if w.Class("sheddable") != nil {
		t.Error("a class without events has counts")
	}
	for range 2 {
		p.Call(interactive, 1).FinishCall()
	}
	testkit.CheckBudget(t, b)
}

func TestBudgetWatchCountsNothingAfterCloseAndRunsItsHook(t *testing.T) {
	b, _ := newTestBudget(t)
	var hooked []bulkhead.EventType
	w := NewBudgetWatch(b, nil, func(e bulkhead.BudgetEvent) { hooked = append(hooked, e.Type) })
	p, _ := b.Flow("walmart", bulkhead.PartnerOptions{})
	p.AcquirePermissionAsync()
	p.FinishCall()
	w.Close()
	w.Close() // idempotent
	p.AcquirePermissionAsync()
	p.FinishCall()
	s := w.Class("batch") // the default class: the last
	if s == nil || s.Count(bulkhead.CallPermitted) != 1 || s.Count(bulkhead.CallFinished) != 1 {
		t.Fatalf("counts after Close: %+v", s)
	}
	if n, _, _ := s.Granted.Snapshot(); n != 0 {
		t.Errorf("a watch without bounds kept a histogram of %d", n)
	}
	if len(hooked) != 2 {
		t.Errorf("hook saw %v, want the 2 events before Close", hooked)
	}
}

func TestNewBudgetWatchPanicsOnBadBounds(t *testing.T) {
	b, _ := newTestBudget(t)
	defer func() {
		if r := recover(); r != "callstats: bucket bound 0s is not positive" {
			t.Fatalf("recovered %v", r)
		}
	}()
	NewBudgetWatch(b, []time.Duration{0}, nil)
}

// Events of several classes racing with each other's first events are all
// counted, each in its own class.
func TestConcurrentFirstEventsOfManyClassesAreAllCounted(t *testing.T) {
	b, _ := newTestBudget(t)
	w := NewBudgetWatch(b, DefaultWaitBuckets, nil)
	defer w.Close()
	classes := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	var wg sync.WaitGroup
	for _, c := range classes {
		for range 4 {
			wg.Go(func() {
				for range 500 {
					w.Record(bulkhead.BudgetEvent{Type: bulkhead.CallPermitted, Class: c, Weight: 2})
				}
			})
		}
	}
	wg.Wait()
	for _, c := range classes {
		s := w.Class(c)
		if s == nil || s.Count(bulkhead.CallPermitted) != 2000 || s.Permits.Load() != 4000 {
			t.Errorf("class %s: %+v", c, s)
		}
	}
}
