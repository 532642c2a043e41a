package bulkhead_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/testkit"
)

// Tests of a weighted call at its partner's bulkhead: a call of weight k
// takes k permits of a *Semaphore partner (its weighted path) as well as k
// of the budget, and every outcome gives back exactly k at each level
// (docs/design.md, "One decision per record, and who owns each permit").

// partnerHolds fails the test unless the partner holds held permits and
// queues queued calls, and the budget holds inUse permits and queues
// budgetQueued calls.
func partnerHolds(t *testing.T, what string, sem *bulkhead.Semaphore, held, queued int, b *bulkhead.Budget, inUse, budgetQueued int) {
	t.Helper()
	m, bm := sem.Metrics(), b.Metrics()
	if m.InFlightCalls != held || m.QueuedCalls != queued || bm.InUse != inUse || bm.Queued != budgetQueued {
		t.Fatalf("%s: partner holds %d and queues %d, budget holds %d and queues %d; want %d, %d, %d, %d",
			what, m.InFlightCalls, m.QueuedCalls, bm.InUse, bm.Queued, held, queued, inUse, budgetQueued)
	}
}

func TestBudgetWeightedCallTakesItsWeightOfThePartnerAndGivesBackExactly(t *testing.T) {
	clk := newClock()
	b := newBudget(t, budgetConfig(10, 0, class("only", 0, 0)), clk)
	p, sem := newPartner(t, b, clk, "walmart", 5, bulkhead.PartnerOptions{})
	g := newGrantLog(b)
	g.ask("first", p.Call(bulkhead.Class{}, 3))
	expectOrder(t, g.order(), "first")
	partnerHolds(t, "first granted", sem, 3, 0, b, 3, 0)

	// 2 partner permits are free: the second waits at its partner, the
	// budget untouched.
	second := g.ask("second", p.Call(bulkhead.Class{}, 3))
	if second.Err() != bulkhead.ErrPending {
		t.Fatalf("second: %v", second.Err())
	}
	partnerHolds(t, "second waits at the partner", sem, 3, 1, b, 3, 0)

	// A light call passes it at the partner (bounded bypass, weights.go).
	g.ask("light", p.Call(bulkhead.Class{}, 1))
	expectOrder(t, g.order(), "light")
	partnerHolds(t, "light passed", sem, 4, 1, b, 4, 0)

	g.finish("first")
	expectOrder(t, g.order(), "second")
	partnerHolds(t, "second granted by both", sem, 4, 0, b, 4, 0)

	g.mu.Lock()
	sc := g.calls["second"]
	delete(g.calls, "second")
	g.mu.Unlock()
	sc.ReleasePermission()
	partnerHolds(t, "second released", sem, 1, 0, b, 1, 0)
	g.finish("light")
	partnerHolds(t, "all back", sem, 0, 0, b, 0, 0)
}

func TestBudgetCallHeavierThanItsPartnerIsRejectedByThePartnerBeforeTheBudget(t *testing.T) {
	clk := newClock()
	b := newBudget(t, budgetConfig(100, 0, class("only", 0, 0)), clk)
	p, sem := newPartner(t, b, clk, "walmart", 4, bulkhead.PartnerOptions{})
	events := recordBudgetEvents(b)

	err := p.Call(bulkhead.Class{}, 5).AcquirePermissionAsync().Err()
	var te *bulkhead.TooHeavyError
	if !errors.As(err, &te) || te.Name != "walmart" || te.Weight != 5 || te.Limit != 4 {
		t.Fatalf("a call of weight 5 on a partner of 4: %v, want the partner's *TooHeavyError", err)
	}
	if errors.Is(err, bulkhead.ErrBulkheadFull) {
		t.Error("a *TooHeavyError is ErrBulkheadFull")
	}
	if err := p.Call(bulkhead.Class{}, 5).AcquirePermission(context.Background()); !errors.As(err, &te) {
		t.Fatalf("blocking: %v", err)
	}
	partnerHolds(t, "after the rejections", sem, 0, 0, b, 0, 0)
	if got := events.types(); len(got) != 0 {
		t.Errorf("budget events %v: the budget was asked", got)
	}

	// Queued at the partner when a ChangeConfig lowers its limit below the
	// weight: the partner rejects it, the budget never sees it.
	g := newGrantLog(b)
	g.ask("held", p.Call(bulkhead.Class{}, 1))
	w := g.ask("w", p.Call(bulkhead.Class{}, 4))
	partnerHolds(t, "w queued", sem, 1, 1, b, 1, 0)
	cfg := sem.Config()
	cfg.MaxConcurrentCalls = 3
	if err := sem.ChangeConfig(cfg); err != nil {
		t.Fatal(err)
	}
	if !errors.As(w.Err(), &te) || te.Limit != 3 {
		t.Fatalf("w after the limit fell to 3: %v", w.Err())
	}
	partnerHolds(t, "w rejected", sem, 1, 0, b, 1, 0)
	g.order()
	g.finish("held")
	if got := events.types(); len(got) != 2 {
		t.Errorf("budget events %v, want held's permitted and finished only", got)
	}
}

func TestBudgetRejectionAfterThePartnerGrantedGivesBackItsWholeWeight(t *testing.T) {
	clk := newClock()
	cfg := budgetConfig(4, 0, bulkhead.ClassConfig{Name: "now"}, class("wait", 0, 0))
	cfg.Classes[1].MaxWaitDuration = time.Second
	b := newBudget(t, cfg, clk)
	now, wait := mustClass(t, b, "now"), mustClass(t, b, "wait")
	holder := mustFlow(t, b, "holder", bulkhead.PartnerOptions{})
	p, sem := newPartner(t, b, clk, "walmart", 8, bulkhead.PartnerOptions{})

	var we *bulkhead.WeightError
	if err := p.Call(wait, 5).AcquirePermissionAsync().Err(); !errors.As(err, &we) {
		t.Fatalf("weight 5 in a budget of 4: %v, want a *WeightError", err)
	}
	partnerHolds(t, "after the *WeightError", sem, 0, 0, b, 0, 0)

	g := newGrantLog(b)
	g.ask("held", holder.Call(wait, 2))
	expectOrder(t, g.order(), "held")
	if err := p.Call(now, 3).AcquirePermissionAsync().Err(); !errors.Is(err, bulkhead.ErrBulkheadFull) {
		t.Fatalf("weight 3, 2 free, a class that does not wait: %v", err)
	}
	partnerHolds(t, "after NoWait", sem, 0, 0, b, 2, 0)

	expiring := p.Call(wait, 3).AcquirePermissionAsync()
	partnerHolds(t, "waiting in the budget", sem, 3, 0, b, 2, 1)
	var heldAtCallback atomic.Int64
	heldAtCallback.Store(-1)
	expiring.OnDone(func(error) { heldAtCallback.Store(int64(sem.Metrics().InFlightCalls)) })
	clk.Advance(time.Second)
	if !errors.Is(expiring.Err(), bulkhead.ErrBulkheadFull) {
		t.Fatalf("after its MaxWaitDuration: %v", expiring.Err())
	}
	if h := heldAtCallback.Load(); h != 0 {
		t.Errorf("the partner held %d permits when the expired call's callback ran, want 0", h)
	}
	partnerHolds(t, "expired", sem, 0, 0, b, 2, 0)
	g.finish("held")
}

func TestBudgetWeightedCancelHalfwayGivesBackWhatTheLevelReachedHeld(t *testing.T) {
	clk := newClock()
	b := newBudget(t, budgetConfig(3, 0, class("only", 0, 0)), clk)
	holder := mustFlow(t, b, "holder", bulkhead.PartnerOptions{})
	p, sem := newPartner(t, b, clk, "walmart", 4, bulkhead.PartnerOptions{})
	events := recordBudgetEvents(b)

	// Waiting at the partner (1 of its 4 permits free): Cancel withdraws it
	// there; the budget never hears of it.
	if !p.Call(bulkhead.Class{}, 3).AcquirePermissionAsync().Granted() {
		t.Fatal("first not granted")
	}
	w := p.Call(bulkhead.Class{}, 2).AcquirePermissionAsync()
	partnerHolds(t, "w at the partner", sem, 3, 1, b, 3, 0)
	if !w.Cancel() {
		t.Fatal("Cancel at the partner returned false")
	}
	partnerHolds(t, "w withdrawn at the partner", sem, 3, 0, b, 3, 0)
	p.Call(bulkhead.Class{}, 3).FinishCall()
	partnerHolds(t, "first back", sem, 0, 0, b, 0, 0)

	// Waiting in the budget, holding 3 partner permits: Cancel gives all 3
	// back before its callbacks run.
	if !holder.Call(bulkhead.Class{}, 2).AcquirePermissionAsync().Granted() {
		t.Fatal("holder not granted")
	}
	w = p.Call(bulkhead.Class{}, 3).AcquirePermissionAsync()
	partnerHolds(t, "w in the budget", sem, 3, 0, b, 2, 1)
	var heldAtCallback atomic.Int64
	heldAtCallback.Store(-1)
	w.OnDone(func(error) { heldAtCallback.Store(int64(sem.Metrics().InFlightCalls)) })
	if !w.Cancel() {
		t.Fatal("Cancel in the budget returned false")
	}
	if h := heldAtCallback.Load(); h != 0 {
		t.Errorf("the partner held %d permits when the withdrawn call's callback ran, want 0", h)
	}
	partnerHolds(t, "w withdrawn from the budget", sem, 0, 0, b, 2, 0)
	holder.Call(bulkhead.Class{}, 2).FinishCall()
	var cancelled []int
	for _, e := range events.all() {
		if e.Type == bulkhead.CallCancelled {
			cancelled = append(cancelled, e.Weight)
		}
	}
	if len(cancelled) != 1 || cancelled[0] != 3 {
		t.Errorf("budget CallCancelled weights %v, want [3]: only the call that reached the budget", cancelled)
	}
}

// A weighted release at the partner grants several waiters at once; their
// budget admissions and callbacks run on several goroutines. A panicking
// callback among them strands no permit of either level.
func TestBudgetWeightedPartnerReleaseWithAPanickingCallbackLosesNoPermit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := newClock()
		b := newBudget(t, budgetConfig(10, 0, class("only", 0, 0)), clk)
		p, sem := newPartner(t, b, clk, "walmart", 3, bulkhead.PartnerOptions{})
		heavy := p.Call(bulkhead.Class{}, 3)
		if !heavy.AcquirePermissionAsync().Granted() {
			t.Fatal("heavy not granted")
		}
		panicky := p.Call(bulkhead.Class{}, 2).AcquirePermissionAsync()
		calm := p.AcquirePermissionAsync()
		panicky.OnDone(func(error) { panic("boom") })
		var calmRan atomic.Bool
		calm.OnDone(func(error) { calmRan.Store(true) })
		partnerHolds(t, "both wait at the partner", sem, 3, 2, b, 3, 0)
		// The partner's FIFO pass grants panicky first, so its delivery (to
		// the budget, its grant there, its callback) runs inline on the
		// releasing goroutine, where the panic surfaces; calm's runs on a
		// fresh goroutine.
		if r := testkit.RunToEnd(heavy.FinishCall); r != "boom" {
			t.Fatalf("FinishCall ended with %v, want the callback's panic", r)
		}
		synctest.Wait()
		if !calmRan.Load() || !panicky.Granted() || !calm.Granted() {
			t.Fatalf("after the release: panicky %v, calm %v (ran %v)", panicky.Err(), calm.Err(), calmRan.Load())
		}
		partnerHolds(t, "both granted", sem, 3, 0, b, 3, 0)
		p.Call(bulkhead.Class{}, 2).FinishCall()
		p.FinishCall()
		partnerHolds(t, "all back", sem, 0, 0, b, 0, 0)
	})
}

// A partner bulkhead that is not a *Semaphore has no weights: a call takes
// one call of it whatever its weight. Here the partner is a SemaphoreCall
// of weight 2, so every budget call takes 2 of the Semaphore's permits.
func TestBudgetPartnerThatIsNotASemaphoreTakesOneCallOfIt(t *testing.T) {
	clk := newClock()
	b := newBudget(t, budgetConfig(10, 0, class("only", 0, 0)), clk)
	sem := newSemaphore(t, "pair", partnerConfig(4), bulkhead.WithClock(clk))
	p, err := b.Partner(sem.Call(2), bulkhead.PartnerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := p.Call(bulkhead.Class{}, 3)
	if !c.AcquirePermissionAsync().Granted() {
		t.Fatal("not granted")
	}
	partnerHolds(t, "weight 3 through a SemaphoreCall(2) partner", sem, 2, 0, b, 3, 0)
	c.FinishCall()
	partnerHolds(t, "back", sem, 0, 0, b, 0, 0)
}

// -race: grants, cancels and expiries of weighted calls at both levels,
// racing: each call has one outcome and no permit of either level is left.
func TestBudgetWeightedPartnerRacesLoseNoPermit(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 0))
	raceGrantCancelAndExpiry(t, 4, 300, func(p *bulkhead.BudgetPartner) (bulkhead.Bulkhead, string) {
		k := 1 + rng.IntN(4)
		return p.Call(bulkhead.Class{}, k), fmt.Sprintf("weight %d", k)
	})
}

// raceGrantCancelAndExpiry runs rounds of one call racing, under -race,
// its grant (a holder of every permit of the level under test gives them
// back), its Cancel and its expiry, with the partner's bulkhead and the
// budget both of limit permits, for each level in turn: call(p) is the
// call under test, of partner p, and its description. Whatever wins, the
// call has exactly one outcome, Cancel reports true exactly when that
// outcome is ErrCancelled, and no permit of either level is left held or
// waiting.
func raceGrantCancelAndExpiry(t *testing.T, limit, rounds int, call func(p *bulkhead.BudgetPartner) (bulkhead.Bulkhead, string)) {
	t.Helper()
	for _, stage := range []string{"partner", "budget"} {
		t.Run(stage, func(t *testing.T) {
			for range rounds {
				clk := newClock()
				cfg := budgetConfig(limit, 0, class("only", 0, 0))
				cfg.Classes[0].MaxWaitDuration = time.Second
				b := newBudget(t, cfg, clk)
				semCfg := partnerConfig(limit)
				semCfg.MaxWaitDuration = time.Second
				sem := newSemaphore(t, "p", semCfg, bulkhead.WithClock(clk))
				p, _ := b.Partner(sem, bulkhead.PartnerOptions{})
				// The holder takes every permit of the level under test.
				holder := p.Call(bulkhead.Class{}, limit)
				if stage == "budget" {
					holder = mustFlow(t, b, "other", bulkhead.PartnerOptions{}).Call(bulkhead.Class{}, limit)
				}
				if !holder.AcquirePermissionAsync().Granted() {
					t.Fatal("holder not granted")
				}
				c, what := call(p)
				w := c.AcquirePermissionAsync()
				var outcomes atomic.Int32
				w.OnDone(func(error) { outcomes.Add(1) })
				var wg sync.WaitGroup
				var cancelled atomic.Bool
				wg.Add(3)
				go func() { defer wg.Done(); holder.FinishCall() }()
				go func() { defer wg.Done(); cancelled.Store(w.Cancel()) }()
				go func() { defer wg.Done(); clk.Advance(time.Second) }()
				wg.Wait()
				<-w.Done()
				if w.Granted() {
					c.FinishCall()
				}
				if n := outcomes.Load(); n != 1 {
					t.Fatalf("%s: %d outcomes delivered", what, n)
				}
				if cancelled.Load() != errors.Is(w.Err(), bulkhead.ErrCancelled) {
					t.Fatalf("%s: Cancel returned %v, outcome %v", what, cancelled.Load(), w.Err())
				}
				if m, bm := sem.Metrics(), b.Metrics(); m.InFlightCalls != 0 || m.QueuedCalls != 0 || bm.InUse != 0 || bm.Queued != 0 {
					t.Fatalf("%s: partner left with %+v, budget with %+v (outcome %v)", what, m, bm, w.Err())
				}
			}
		})
	}
}

// The shared granted Acquisition says that both levels granted a call at
// once, nobody waiting at its partner (BudgetCall.AcquirePermissionAsync).
// A call its partner granted past a queued heavier one (bounded bypass),
// in its own enqueue's pass, comes back as a record, granted before
// AcquirePermissionAsync returned. (It came back as the shared one, which
// the linearizability model of both levels cannot tell from a call that
// never queued, and which made it refuse histories where the partner
// granted a queued call on another goroutine before its caller looked.)
func TestBudgetCallGrantedPastAWaiterAtItsPartnerReturnsAGrantedRecord(t *testing.T) {
	clk := newClock()
	b := newBudget(t, budgetConfig(10, 0, class("only", 0, 0)), clk)
	p, sem := newPartner(t, b, clk, "walmart", 5, bulkhead.PartnerOptions{})
	first := p.Call(bulkhead.Class{}, 3)
	if a := first.AcquirePermissionAsync(); a != bulkhead.GrantedAcquisition() {
		t.Fatalf("first, with nobody waiting: %v, want the shared granted Acquisition", a.Err())
	}
	heavy := p.Call(bulkhead.Class{}, 3).AcquirePermissionAsync()
	if heavy.Err() != bulkhead.ErrPending {
		t.Fatalf("heavy: %v, want it waiting at its partner", heavy.Err())
	}
	light := p.Call(bulkhead.Class{}, 1)
	a := light.AcquirePermissionAsync()
	if a.Err() != nil {
		t.Fatalf("light: %v, want it granted past the heavy waiter", a.Err())
	}
	if a == bulkhead.GrantedAcquisition() {
		t.Error("light waited at its partner, yet came back as the shared granted Acquisition")
	}
	partnerHolds(t, "light granted", sem, 4, 1, b, 4, 0)
	light.FinishCall()
	if !heavy.Cancel() {
		t.Fatal("heavy: Cancel lost")
	}
	first.FinishCall()
	partnerHolds(t, "all back", sem, 0, 0, b, 0, 0)
}

// A weighted call released twice, or released with a weight above what its
// partner holds in its class, panics naming the budget and gives back
// nothing at either level: the partner permits that other calls of the
// partner hold (here a call of another class) stay theirs. (The budget's
// check panicked, but the partner's permits went back on the way out: the
// other call's partner permits were freed under it.)
func TestBudgetOverReleasedWeightedCallGivesBackNoPermitOfAnotherCall(t *testing.T) {
	for _, tc := range []struct {
		name    string
		release func(hi bulkhead.Class, p *bulkhead.BudgetPartner)
		hiHeld  int // what the hi call still holds at each level after it
	}{
		{"released twice", func(hi bulkhead.Class, p *bulkhead.BudgetPartner) {
			c := p.Call(hi, 3)
			c.ReleasePermission()
			c.ReleasePermission()
		}, 0},
		{"finished twice", func(hi bulkhead.Class, p *bulkhead.BudgetPartner) {
			c := p.Call(hi, 3)
			c.FinishCall()
			c.FinishCall()
		}, 0},
		{"released with a larger weight", func(hi bulkhead.Class, p *bulkhead.BudgetPartner) {
			p.Call(hi, 5).ReleasePermission()
		}, 3},
		{"finished with a larger weight", func(hi bulkhead.Class, p *bulkhead.BudgetPartner) {
			p.Call(hi, 5).FinishCall()
		}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := newClock()
			b := newBudget(t, budgetConfig(10, 0, class("hi", 0, 0), class("lo", 0, 0)), clk)
			hi, lo := mustClass(t, b, "hi"), mustClass(t, b, "lo")
			p, sem := newPartner(t, b, clk, "walmart", 10, bulkhead.PartnerOptions{})
			for _, c := range []bulkhead.BudgetCall{p.Call(hi, 3), p.Call(lo, 3)} {
				if a := c.AcquirePermissionAsync(); !a.Granted() {
					t.Fatalf("%s call: %v", c.Class().Name(), a.Err())
				}
			}
			partnerHolds(t, "both granted", sem, 6, 0, b, 6, 0)
			msg := panicOf(func() { tc.release(hi, p) })
			if want := `budget "hub": partner "walmart" released more permits of class "hi" than it holds`; msg != want {
				t.Fatalf("panic %q, want %q", msg, want)
			}
			partnerHolds(t, "after the over-release", sem, 3+tc.hiHeld, 0, b, 3+tc.hiHeld, 0)
			if tc.hiHeld > 0 {
				p.Call(hi, 3).ReleasePermission()
			}
			p.Call(lo, 3).FinishCall()
		})
	}
}
