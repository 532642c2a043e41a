package bulkhead_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/testkit"
)

// Tests of a call through a partner and the budget: the partner's permit
// first, one Acquisition for both, and no permit of either level lost on
// any outcome or race (docs/design.md, "One decision per record, and who
// owns each permit").

func partnerConfig(limit int) bulkhead.Config {
	return bulkhead.Config{MaxConcurrentCalls: limit, MaxWaitDuration: time.Minute, MaxQueuedCalls: bulkhead.Unbounded}
}

func newPartner(t testing.TB, b *bulkhead.Budget, clk bulkhead.Clock, name string, limit int, opts bulkhead.PartnerOptions) (*bulkhead.BudgetPartner, *bulkhead.Semaphore) {
	t.Helper()
	sem := newSemaphore(t, name, partnerConfig(limit), bulkhead.WithClock(clk))
	p, err := b.Partner(sem, opts)
	if err != nil {
		t.Fatal(err)
	}
	return p, sem
}

func TestBudgetPartnerPermitIsTakenBeforeTheBudgets(t *testing.T) {
	clk := newClock()
	b := newBudget(t, budgetConfig(10, 0, class("only", 0, 0)), clk)
	p, sem := newPartner(t, b, clk, "walmart", 3, bulkhead.PartnerOptions{})
	g := newGrantLog(b)
	g.ask("first", p.Call(bulkhead.Class{}, 2))
	second := g.ask("second", p.Call(bulkhead.Class{}, 3))
	expectOrder(t, g.order(), "first")
	if m := b.Metrics(); m.InUse != 2 || m.Queued != 0 {
		t.Fatalf("budget %+v: a call waiting for its partner must not reach the budget", m)
	}
	if m := sem.Metrics(); m.InFlightCalls != 2 || m.QueuedCalls != 1 {
		t.Fatalf("partner %+v, want the first call's 2 permits held and the second (3) queued", m)
	}
	var grantedBeforeReturn atomic.Bool
	second.OnDone(func(error) { grantedBeforeReturn.Store(true) })
	g.finish("first")
	if !grantedBeforeReturn.Load() {
		t.Error("the callbacks of a call granted by both levels at once had not run when FinishCall returned")
	}
	expectOrder(t, g.order(), "second")
	if m := b.Metrics(); m.InUse != 3 {
		t.Fatalf("budget %+v, want the second call's 3 permits", m)
	}
	g.finish("second")
}

func TestBudgetPartnerWaitingInTheBudgetHoldsOnlyItsOwnPartnersPermit(t *testing.T) {
	clk := newClock()
	b := newBudget(t, budgetConfig(1, 0, class("only", 0, 0)), clk)
	pa, semA := newPartner(t, b, clk, "a", 5, bulkhead.PartnerOptions{})
	pb, semB := newPartner(t, b, clk, "b", 5, bulkhead.PartnerOptions{})
	g := newGrantLog(b)
	g.ask("a1", pa.Call(bulkhead.Class{}, 1))
	g.ask("a2", pa.Call(bulkhead.Class{}, 1))
	g.ask("b1", pb.Call(bulkhead.Class{}, 1))
	expectOrder(t, g.order(), "a1")
	if a, b := semA.Metrics().InFlightCalls, semB.Metrics().InFlightCalls; a != 2 || b != 1 {
		t.Fatalf("partner permits held: a %d, b %d; want 2 and 1 (one per call, its own partner's)", a, b)
	}
	g.finish("a1")
	expectOrder(t, g.order(), "a2") // a holds 0, b 0: a2 waited longest
	g.finish("a2")
	expectOrder(t, g.order(), "b1")
	g.finish("b1")
}

func TestBudgetPartnerRejectionIsThePartnersOwnError(t *testing.T) {
	clk := newClock()
	b := newBudget(t, budgetConfig(10, 0, class("only", 0, 0)), clk)
	sem := newSemaphore(t, "walmart", bulkhead.Config{MaxConcurrentCalls: 1, MaxQueuedCalls: bulkhead.Unbounded}, bulkhead.WithClock(clk))
	p, err := b.Partner(sem, bulkhead.PartnerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	first := p.AcquirePermissionAsync()
	second := p.AcquirePermissionAsync()
	var fe *bulkhead.FullError
	if !first.Granted() || !errors.As(second.Err(), &fe) || fe.Name != "walmart" || fe.Reason != bulkhead.NoWait {
		t.Fatalf("first %v, second %v: want the partner's no-wait *FullError", first.Err(), second.Err())
	}
	if m := b.Metrics(); m.InUse != 1 {
		t.Fatalf("budget %+v", m)
	}
	p.FinishCall()
}

func TestBudgetRejectionGivesThePartnerPermitBack(t *testing.T) {
	clk := newClock()
	cfg := budgetConfig(2, 0, bulkhead.ClassConfig{Name: "now"}, class("wait", 0, 0))
	cfg.Classes[1].MaxWaitDuration = time.Second
	b := newBudget(t, cfg, clk)
	now, wait := mustClass(t, b, "now"), mustClass(t, b, "wait")
	holder := mustFlow(t, b, "holder", bulkhead.PartnerOptions{})
	p, sem := newPartner(t, b, clk, "walmart", 1, bulkhead.PartnerOptions{})
	g := newGrantLog(b)
	g.ask("held", holder.Call(wait, 2))
	expectOrder(t, g.order(), "held")
	check := func(what string, a *bulkhead.Acquisition, target error) {
		t.Helper()
		if !errors.Is(a.Err(), target) {
			t.Fatalf("%s: %v, want %v", what, a.Err(), target)
		}
		if m := sem.Metrics(); m.InFlightCalls != 0 {
			t.Fatalf("%s: the partner still has %d permit in flight", what, m.InFlightCalls)
		}
	}
	check("no wait", p.Call(now, 1).AcquirePermissionAsync(), bulkhead.ErrBulkheadFull)
	check("too heavy", p.Call(wait, 3).AcquirePermissionAsync(), bulkhead.ErrTooHeavy)
	timedOut := p.Call(wait, 1).AcquirePermissionAsync()
	// A call queued behind it at the partner gets the permit it gives back.
	next := g.ask("next", p.Call(wait, 1))
	if sem.Metrics().QueuedCalls != 1 {
		t.Fatalf("partner %+v", sem.Metrics())
	}
	var permitAtCallback int
	timedOut.OnDone(func(error) { permitAtCallback = sem.Metrics().InFlightCalls })
	clk.Advance(time.Second)
	if !errors.Is(timedOut.Err(), bulkhead.ErrBulkheadFull) {
		t.Fatalf("after a second in the budget: %v", timedOut.Err())
	}
	if permitAtCallback != 1 { // next's, not the rejected call's: given back before the callback
		t.Errorf("the partner had %d permits in flight when the rejected call's callback ran, want 1 (the next call's)", permitAtCallback)
	}
	if next.Err() != bulkhead.ErrPending || b.Metrics().Queued != 1 {
		t.Fatalf("the next call: %v, budget %+v; want it waiting in the budget", next.Err(), b.Metrics())
	}
	g.finish("held")
	expectOrder(t, g.order(), "next")
	g.finish("next")
}

func TestBudgetPartnerCancelWhileWaitingForThePartnerLeavesTheBudgetUntouched(t *testing.T) {
	clk := newClock()
	b := newBudget(t, budgetConfig(10, 0, class("only", 0, 0)), clk)
	p, sem := newPartner(t, b, clk, "walmart", 1, bulkhead.PartnerOptions{})
	events := recordBudgetEvents(b)
	g := newGrantLog(b)
	g.ask("held", p.Call(bulkhead.Class{}, 1))
	w := g.ask("w", p.Call(bulkhead.Class{}, 1))
	if !w.Cancel() || !errors.Is(w.Err(), bulkhead.ErrCancelled) {
		t.Fatalf("Cancel while waiting for the partner: %v", w.Err())
	}
	if m := sem.Metrics(); m.QueuedCalls != 0 || m.InFlightCalls != 1 {
		t.Fatalf("partner after the cancel: %+v", m)
	}
	expectOrder(t, g.order(), "held", "w:"+bulkhead.ErrCancelled.Error())
	g.finish("held")
	if got := events.types(); len(got) != 2 || got[0] != bulkhead.CallPermitted || got[1] != bulkhead.CallFinished {
		t.Errorf("budget events %v: the cancelled call never reached the budget", got)
	}
}

func TestBudgetPartnerCancelWhileWaitingInTheBudgetGivesThePartnerPermitBack(t *testing.T) {
	clk := newClock()
	b := newBudget(t, budgetConfig(1, 0, class("only", 0, 0)), clk)
	holder := mustFlow(t, b, "holder", bulkhead.PartnerOptions{})
	p, sem := newPartner(t, b, clk, "walmart", 1, bulkhead.PartnerOptions{})
	events := recordBudgetEvents(b)
	g := newGrantLog(b)
	g.ask("held", holder.Call(bulkhead.Class{}, 1))
	w := g.ask("w", p.Call(bulkhead.Class{}, 1))
	if sem.Metrics().InFlightCalls != 1 || b.Metrics().Queued != 1 {
		t.Fatalf("partner %+v, budget %+v", sem.Metrics(), b.Metrics())
	}
	var inFlightAtCallback int
	w.OnDone(func(error) { inFlightAtCallback = sem.Metrics().InFlightCalls })
	if !w.Cancel() {
		t.Fatal("Cancel of a waiting call returned false")
	}
	if inFlightAtCallback != 0 {
		t.Errorf("the partner permit was not back when the callbacks ran")
	}
	if m := b.Metrics(); m.Queued != 0 {
		t.Fatalf("budget %+v", m)
	}
	g.order()
	g.finish("held")
	if got := events.types(); len(got) != 3 || got[1] != bulkhead.CallCancelled {
		t.Errorf("budget events %v, want permitted, cancelled, finished", got)
	}
}

func TestBudgetCancelThatLosesToAGrantLeavesThePermitsWithTheCaller(t *testing.T) {
	clk := newClock()
	b := newBudget(t, budgetConfig(1, 0, class("only", 0, 0)), clk)
	holder := mustFlow(t, b, "holder", bulkhead.PartnerOptions{})
	p, sem := newPartner(t, b, clk, "walmart", 1, bulkhead.PartnerOptions{})
	holder.AcquirePermissionAsync()
	w := p.AcquirePermissionAsync()
	holder.FinishCall()
	if w.Cancel() || !w.Granted() {
		t.Fatalf("Cancel after the grant: %v", w.Err())
	}
	if sem.Metrics().InFlightCalls != 1 || b.Metrics().InUse != 1 {
		t.Fatalf("partner %+v, budget %+v: the caller holds both", sem.Metrics(), b.Metrics())
	}
	p.ReleasePermission()
}

func TestBudgetBlockingAcquireWaitsForBothLevelsAndWithdrawsWhenCtxEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := newClock()
		b := newBudget(t, budgetConfig(1, 0, class("only", 0, 0)), clk)
		holder := mustFlow(t, b, "holder", bulkhead.PartnerOptions{})
		p, sem := newPartner(t, b, clk, "walmart", 1, bulkhead.PartnerOptions{})
		holder.AcquirePermissionAsync()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- p.AcquirePermission(ctx) }()
		synctest.Wait() // the goroutine above waits in the budget
		if b.Metrics().Queued != 1 {
			t.Fatalf("budget %+v: the blocking call is not waiting in it", b.Metrics())
		}
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("AcquirePermission after ctx ended: %v", err)
		}
		if sem.Metrics().InFlightCalls != 0 || b.Metrics().Queued != 0 {
			t.Fatalf("partner %+v, budget %+v after the withdrawal", sem.Metrics(), b.Metrics())
		}
		go func() { done <- p.AcquirePermission(context.Background()) }()
		synctest.Wait()
		if b.Metrics().Queued != 1 {
			t.Fatalf("budget %+v: the blocking call is not waiting in it", b.Metrics())
		}
		holder.FinishCall()
		if err := <-done; err != nil {
			t.Fatalf("AcquirePermission: %v", err)
		}
		p.FinishCall()
		ctx, cancel = context.WithCancel(context.Background())
		cancel()
		if err := p.AcquirePermission(ctx); !errors.Is(err, context.Canceled) {
			t.Fatalf("AcquirePermission with an ended ctx: %v", err)
		}
	})
}

// budgetEventLog records a budget's events.
type budgetEventLog struct {
	mu     sync.Mutex
	events []bulkhead.BudgetEvent
}

func recordBudgetEvents(b *bulkhead.Budget) *budgetEventLog {
	l := &budgetEventLog{}
	b.OnEvent(func(e bulkhead.BudgetEvent) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.events = append(l.events, e)
	})
	return l
}

func (l *budgetEventLog) all() []bulkhead.BudgetEvent {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]bulkhead.BudgetEvent(nil), l.events...)
}

func (l *budgetEventLog) types() []bulkhead.EventType {
	var ts []bulkhead.EventType
	for _, e := range l.all() {
		ts = append(ts, e.Type)
	}
	return ts
}

// The races of grant, cancel and expiry at both levels, many times under
// -race: whatever wins, each call has exactly one outcome and no permit of
// either level is left held (raceGrantCancelAndExpiry, with the partner's
// own methods and one permit per level).
func TestBudgetPartnerRacesOfGrantCancelAndExpiryLoseNoPermit(t *testing.T) {
	raceGrantCancelAndExpiry(t, 1, 400, func(p *bulkhead.BudgetPartner) (bulkhead.Bulkhead, string) {
		return p, "the partner's own call"
	})
}

func TestBudgetPanickingCallbackStrandsNoPermitOfEitherLevel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := newClock()
		b := newBudget(t, budgetConfig(2, 0, class("only", 0, 0)), clk)
		holder, hsem := newPartner(t, b, clk, "holder", 2, bulkhead.PartnerOptions{})
		p, sem := newPartner(t, b, clk, "p", 2, bulkhead.PartnerOptions{})
		holder.Call(bulkhead.Class{}, 2).AcquirePermissionAsync()
		panicky := p.AcquirePermissionAsync()
		calm := p.AcquirePermissionAsync()
		panicky.OnDone(func(error) { panic("boom") })
		var calmRan atomic.Bool
		calm.OnDone(func(error) { calmRan.Store(true) })
		// The holder gives back 2 budget permits: both waiters are granted in
		// one pass, one of them panics on the releasing goroutine.
		if r := testkit.RunToEnd(func() { holder.Call(bulkhead.Class{}, 2).FinishCall() }); r != "boom" {
			t.Fatalf("FinishCall ended with %v, want the callback's panic", r)
		}
		if hsem.Metrics().InFlightCalls != 0 {
			t.Error("the holder's partner permits were not given back although a callback panicked")
		}
		synctest.Wait() // calm's callback started on a fresh goroutine before FinishCall returned
		if !calmRan.Load() {
			t.Fatal("the callback after the panicking one never ran")
		}
		if !panicky.Granted() || !calm.Granted() || sem.Metrics().InFlightCalls != 2 {
			t.Fatalf("%v %v %+v", panicky.Err(), calm.Err(), sem.Metrics())
		}
		p.FinishCall()
		p.FinishCall()
	})
}

func TestBudgetGoexitInAListenerStillDeliversTheOutcomes(t *testing.T) {
	clk := newClock()
	b := newBudget(t, budgetConfig(1, 0, class("only", 0, 0)), clk)
	holder := mustFlow(t, b, "holder", bulkhead.PartnerOptions{})
	p, sem := newPartner(t, b, clk, "p", 1, bulkhead.PartnerOptions{})
	holder.AcquirePermissionAsync()
	w := p.AcquirePermissionAsync()
	ran := make(chan struct{})
	w.OnDone(func(error) { close(ran) })
	var once sync.Once
	b.OnEvent(func(e bulkhead.BudgetEvent) {
		if e.Type == bulkhead.CallFinished {
			once.Do(runtime.Goexit)
		}
	})
	if r := testkit.RunToEnd(holder.FinishCall); r != testkit.Goexited {
		t.Fatalf("FinishCall ended with %v, want Goexit", r)
	}
	<-ran
	if !w.Granted() || sem.Metrics().InFlightCalls != 1 {
		t.Fatalf("%v %+v", w.Err(), sem.Metrics())
	}
	p.FinishCall()
}

// A Cancel whose withdrawal runs other calls' user code (giving the partner
// permit back grants a call whose callback panics) must still deliver the
// cancelled call's own callbacks: Cancel never gets to them when the panic
// goes on out of it.
func TestBudgetCancelWhoseWithdrawalPanicsStillRunsItsCallbacks(t *testing.T) {
	for _, exit := range []bool{false, true} {
		clk := newClock()
		cfg := budgetConfig(1, 0, class("wait", 0, 0), bulkhead.ClassConfig{Name: "now"})
		b := newBudget(t, cfg, clk)
		holder := mustFlow(t, b, "holder", bulkhead.PartnerOptions{})
		p, sem := newPartner(t, b, clk, "p", 1, bulkhead.PartnerOptions{})
		holder.AcquirePermissionAsync()
		w := p.Call(mustClass(t, b, "wait"), 1).AcquirePermissionAsync() // holds p's permit, waits in the budget
		if w.Err() != bulkhead.ErrPending {
			t.Fatalf("w: %v", w.Err())
		}
		// w2 waits for p's permit; the budget will refuse it at once.
		w2 := p.Call(mustClass(t, b, "now"), 1).AcquirePermissionAsync()
		w2.OnDone(func(error) {
			if exit {
				runtime.Goexit()
			}
			panic("boom")
		})
		ran := make(chan error, 1)
		w.OnDone(func(err error) { ran <- err })
		r := testkit.RunToEnd(func() { w.Cancel() })
		if want := any("boom"); exit {
			if r != testkit.Goexited {
				t.Fatalf("Cancel ended with %v, want Goexit", r)
			}
		} else if r != want {
			t.Fatalf("Cancel ended with %v, want w2's panic", r)
		}
		select {
		case err := <-ran:
			if !errors.Is(err, bulkhead.ErrCancelled) {
				t.Fatalf("w's callback got %v", err)
			}
		case <-time.After(10 * time.Second): // real time: only a failure waits this long
			t.Fatal("the cancelled call's callbacks never ran")
		}
		if sem.Metrics().InFlightCalls != 0 || b.Metrics().Queued != 0 {
			t.Fatalf("partner %+v, budget %+v", sem.Metrics(), b.Metrics())
		}
		holder.FinishCall()
	}
}

// A newcomer whose arrival delivers other outcomes (an eviction) whose
// callback panics is never returned to its caller: it must be withdrawn, or
// it would wait, and later hold permits, for nobody.
func TestBudgetNewcomerWhoseArrivalDeliveryPanicsIsWithdrawn(t *testing.T) {
	clk := newClock()
	cfg := budgetConfig(1, 0, class("hi", 0, 0), class("lo", 0, 0))
	cfg.MaxQueuedCalls = 1
	b := newBudget(t, cfg, clk)
	holder := mustFlow(t, b, "holder", bulkhead.PartnerOptions{})
	p, sem := newPartner(t, b, clk, "p", 2, bulkhead.PartnerOptions{})
	holder.AcquirePermissionAsync()
	lo := p.Call(mustClass(t, b, "lo"), 1).AcquirePermissionAsync()
	lo.OnDone(func(error) { panic("evicted") })
	r := testkit.RunToEnd(func() { p.Call(mustClass(t, b, "hi"), 1).AcquirePermissionAsync() })
	if r != "evicted" {
		t.Fatalf("the newcomer's AcquirePermissionAsync ended with %v", r)
	}
	if m := b.Metrics(); m.Queued != 0 {
		t.Fatalf("budget %+v: the newcomer nobody holds is still queued", m)
	}
	if n := sem.Metrics().InFlightCalls; n != 0 {
		t.Fatalf("partner holds %d permits", n)
	}
	holder.FinishCall()
}

// Partner refuses a bulkhead whose calls already take permits of the same
// budget (one of its partners or flows, a BudgetCall of one, or another
// budget's partner built on one): a call would hold the budget's permits
// while it waits for the budget's permits, so with the budget full it
// waits for itself (docs/design.md: the two levels never wait for each
// other). It was accepted, and a call of it on a budget of 1 waited until
// its MaxWaitDuration. A partner of another budget is still accepted.
func TestBudgetPartnerRefusesABulkheadThatTakesTheBudgetsOwnPermits(t *testing.T) {
	clk := newClock()
	b := newBudget(t, budgetConfig(1, 0, class("only", 0, 0)), clk)
	other := newBudget(t, budgetConfig(1, 0, class("only", 0, 0)), clk)
	p, _ := newPartner(t, b, clk, "walmart", 5, bulkhead.PartnerOptions{})
	flow := mustFlow(t, b, "edi", bulkhead.PartnerOptions{})
	call := p.Call(bulkhead.Class{}, 1)
	// a third budget: b's calls wait for other below, which must not
	// wait for b (TestBudgetPartnerRefusesTwoBudgetsThatWouldWaitForEachOther)
	third := newBudget(t, budgetConfig(1, 0, class("only", 0, 0)), clk)
	viaOther, err := third.Partner(p, bulkhead.PartnerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		bh   bulkhead.Bulkhead
	}{
		{"its partner", p},
		{"its flow", flow},
		{"a BudgetCall of its partner", call},
		{"a *BudgetCall of its partner", &call},
		{"another budget's partner on its partner", viaOther},
	} {
		got, err := b.Partner(tc.bh, bulkhead.PartnerOptions{})
		want := fmt.Sprintf(`budget "hub": Partner called with a bulkhead (%q) whose calls take permits of this budget already`, tc.bh.Name())
		if got != nil || err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%s: Partner = %v, %v; want an error starting %q", tc.name, got, err, want)
		}
	}
	if m := b.Metrics(); m.Partners != 2 {
		t.Errorf("a refused partner was joined: %d partners, want 2", m.Partners)
	}

	// Another budget's partner is a partner like any other: its calls take
	// that budget's permits, then this one's.
	sem := newSemaphore(t, "acme", partnerConfig(5), bulkhead.WithClock(clk))
	nested, err := other.Partner(sem, bulkhead.PartnerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	q, err := b.Partner(nested, bulkhead.PartnerOptions{})
	if err != nil {
		t.Fatalf("Partner(a partner of another budget): %v", err)
	}
	if a := q.AcquirePermissionAsync(); !a.Granted() {
		t.Fatalf("nested call: %v", a.Err())
	}
	if bm, om := b.Metrics(), other.Metrics(); bm.InUse != 1 || om.InUse != 1 {
		t.Fatalf("nested call holds %d of this budget and %d of the other, want 1 and 1", bm.InUse, om.InUse)
	}
	q.FinishCall()
}

// Partner's "fails with an error ... if bh is nil" holds for a nil pointer
// passed as the Bulkhead too (a nil *Semaphore, a nil *BudgetPartner), as
// for the nil interface: it crashed with a nil dereference reading its
// name.
func TestBudgetPartnerRefusesANilPointerAsTheBulkhead(t *testing.T) {
	b := newBudget(t, budgetConfig(1, 0, class("only", 0, 0)), newClock())
	for _, bh := range []bulkhead.Bulkhead{(*bulkhead.Semaphore)(nil), (*bulkhead.BudgetPartner)(nil), (*bulkhead.BudgetCall)(nil)} {
		var (
			p   *bulkhead.BudgetPartner
			err error
		)
		if msg := panicOf(func() { p, err = b.Partner(bh, bulkhead.PartnerOptions{}) }); msg != "" {
			t.Fatalf("Partner(%T nil) panicked: %s", bh, msg)
		}
		if want := `budget "hub": Partner called with a nil Bulkhead`; p != nil || err == nil || err.Error() != want {
			t.Errorf("Partner(%T nil) = %v, %v; want the error %q", bh, p, err, want)
		}
	}
}
