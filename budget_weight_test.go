package bulkhead_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/rxbulkhead/bulkhead"
)

// Tests of weighted calls: how a heavy call at the front interacts with
// lighter ones behind it (docs/design.md, "Weighted calls: bounded
// bypass").

// With MaxBypass 0 the budget behaves as x/sync/semaphore: a heavy call
// that does not fit holds back the lighter calls behind it.
func TestBudgetWithoutBypassAHeavyCallHoldsBackLighterOnes(t *testing.T) {
	clk := newClock()
	b := newBudget(t, budgetConfig(4, 0, class("only", 0, 0)), clk)
	a, h, l := mustFlow(t, b, "a", bulkhead.PartnerOptions{}), mustFlow(t, b, "h", bulkhead.PartnerOptions{}), mustFlow(t, b, "l", bulkhead.PartnerOptions{})
	g := newGrantLog(b)
	for _, x := range []string{"a1", "a2", "a3"} {
		g.ask(x, a.Call(bulkhead.Class{}, 1))
	}
	g.ask("heavy", h.Call(bulkhead.Class{}, 3))
	g.ask("light", l.Call(bulkhead.Class{}, 1))
	expectOrder(t, g.order(), "a1", "a2", "a3")
	if m := b.Metrics(); m.Free != 1 {
		t.Fatalf("metrics %+v", m)
	}
	g.finish("a1")
	if got := g.order(); len(got) != 0 {
		t.Fatalf("%v granted past the heavy call with MaxBypass 0", got)
	}
	g.finish("a2")
	expectOrder(t, g.order(), "heavy")
	g.finish("a3")
	expectOrder(t, g.order(), "light")
	g.finishAll(t, "heavy", "light")
}

// With MaxBypass m, lighter calls pass a heavy one for m permits; then the
// permits coming back stay free for it, and it is granted by the time m + k
// permits came back while it was the front.
func TestBudgetLightCallsPassAHeavyOneForAtMostMaxBypassPermits(t *testing.T) {
	clk := newClock()
	const bypass, k = 2, 4
	b := newBudget(t, budgetConfig(4, bypass, class("only", 0, 0)), clk)
	a, h, l := mustFlow(t, b, "a", bulkhead.PartnerOptions{}), mustFlow(t, b, "h", bulkhead.PartnerOptions{}), mustFlow(t, b, "l", bulkhead.PartnerOptions{})
	g := newGrantLog(b)
	for _, x := range []string{"a1", "a2", "a3"} {
		g.ask(x, a.Call(bulkhead.Class{}, 1))
	}
	g.ask("heavy", h.Call(bulkhead.Class{}, k))
	lights := []string{"l1", "l2", "l3", "l4", "l5"}
	for _, x := range lights {
		g.ask(x, l.Call(bulkhead.Class{}, 1))
	}
	expectOrder(t, g.order(), "a1", "a2", "a3", "l1") // l1 passes: 1 permit charged
	held := []string{"a1", "a2", "a3", "l1"}
	passed := []string{"l1"} // light calls granted before the heavy one
	returned, heavyAt := 0, 0
	for heavyAt == 0 {
		if len(held) == 0 {
			t.Fatal("nothing left to give back and the heavy call still waits")
		}
		x := held[0]
		held = held[1:]
		g.finish(x)
		returned++
		for _, got := range g.order() {
			if got == "heavy" {
				heavyAt = returned
				continue
			}
			held = append(held, got)
			passed = append(passed, got)
		}
	}
	if heavyAt > bypass+k {
		t.Errorf("the heavy call was granted after %d permits came back, want at most MaxBypass + k = %d", heavyAt, bypass+k)
	}
	expectOrder(t, passed, "l1", "l2") // MaxBypass 2: two light calls, then the permits wait for it
	g.finishAll(t, append(held, "heavy")...)
	for len(g.calls) > 0 {
		for _, x := range g.order() { // l3, l4, l5
			g.finish(x)
		}
	}
}

func TestBudgetCallHeavierThanTheBudgetIsRejectedWithAWeightError(t *testing.T) {
	clk := newClock()
	cfg := budgetConfig(10, 0, class("crit", 0, 2), class("batch", 0, 0))
	cfg.Groups = []bulkhead.GroupConfig{
		{Name: "gold", Nominal: 3, Lendable: 1, BorrowingLimit: 0},
		{Name: "silver", Nominal: 2, Lendable: 0, BorrowingLimit: 1},
	}
	b := newBudget(t, cfg, clk)
	batch := mustClass(t, b, "batch")
	for _, tc := range []struct {
		group, class  string
		weight, limit int
	}{
		{"", "crit", 11, 6},       // 10 - gold's 2 and silver's 2 reserved
		{"", "batch", 5, 4},       // and crit's headroom
		{"gold", "crit", 4, 3},    // its Nominal + BorrowingLimit
		{"silver", "batch", 4, 3}, // its limit
	} {
		f := mustFlow(t, b, tc.group+"-"+tc.class, bulkhead.PartnerOptions{Group: tc.group, Class: tc.class})
		a := f.Call(bulkhead.Class{}, tc.weight).AcquirePermissionAsync()
		var we *bulkhead.WeightError
		if err := a.Err(); !errors.As(err, &we) || !errors.Is(err, bulkhead.ErrTooHeavy) || errors.Is(err, bulkhead.ErrBulkheadFull) {
			t.Fatalf("%s weight %d: %v, want a *WeightError (ErrTooHeavy, not ErrBulkheadFull)", f.Name(), tc.weight, err)
		}
		if we.Weight != tc.weight || we.Limit != tc.limit || we.Partner != f.Name() || we.Class != tc.class {
			t.Errorf("%+v, want weight %d limit %d", *we, tc.weight, tc.limit)
		}
		if a := f.Call(bulkhead.Class{}, tc.limit).AcquirePermissionAsync(); !a.Granted() {
			t.Errorf("%s: a call of weight %d (the limit) was not granted: %v", f.Name(), tc.limit, a.Err())
		} else {
			f.Call(bulkhead.Class{}, tc.limit).FinishCall()
		}
	}
	_ = batch
}

func TestBudgetWaiterMadeTooHeavyByChangeConfigIsRejected(t *testing.T) {
	clk := newClock()
	cfg := budgetConfig(6, 0, class("only", 0, 0))
	b := newBudget(t, cfg, clk)
	a, h := mustFlow(t, b, "a", bulkhead.PartnerOptions{}), mustFlow(t, b, "h", bulkhead.PartnerOptions{})
	g := newGrantLog(b)
	g.ask("a", a.Call(bulkhead.Class{}, 2))
	heavy := g.ask("heavy", h.Call(bulkhead.Class{}, 5))
	expectOrder(t, g.order(), "a")
	cfg.Size = 4
	if err := b.ChangeConfig(cfg); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(heavy.Err(), bulkhead.ErrTooHeavy) {
		t.Fatalf("the waiter of weight 5 after Size 6 -> 4: %v, want ErrTooHeavy", heavy.Err())
	}
	g.order()
	g.finish("a")
}

// Every waiter passed over for lack of permits is charged for the grants
// that pass it, not only the first one: with two heavy calls blocked, the
// second must not let MaxBypass more permits through once the first is
// granted (it was passed by the same calls all along), or with many heavy
// waiters the last would wait for MaxBypass times their number.
func TestBudgetEveryBlockedWaiterIsPassedByAtMostMaxBypassPermits(t *testing.T) {
	clk := newClock()
	const bypass = 2
	b := newBudget(t, budgetConfig(4, bypass, class("only", 0, 0)), clk)
	a := mustFlow(t, b, "a", bulkhead.PartnerOptions{})
	h1, h2 := mustFlow(t, b, "h1", bulkhead.PartnerOptions{}), mustFlow(t, b, "h2", bulkhead.PartnerOptions{})
	l := mustFlow(t, b, "l", bulkhead.PartnerOptions{})
	g := newGrantLog(b)
	for _, x := range []string{"a1", "a2", "a3", "a4"} {
		g.ask(x, a.Call(bulkhead.Class{}, 1))
	}
	g.ask("h1", h1.Call(bulkhead.Class{}, 3))
	g.ask("h2", h2.Call(bulkhead.Class{}, 3))
	for i := range 8 {
		g.ask(fmt.Sprint("l", i), l.Call(bulkhead.Class{}, 1))
	}
	var order []string
	held := g.order()
	for len(order) < 10 {
		if len(held) == 0 {
			t.Fatalf("nothing left to give back; granted so far: %v", order)
		}
		x := held[0]
		held = held[1:]
		g.finish(x)
		for _, got := range g.order() {
			order = append(order, got)
			held = append(held, got)
		}
	}
	lightsBefore := func(heavy string) int {
		n := 0
		for _, x := range order {
			if x == heavy {
				return n
			}
			if strings.HasPrefix(x, "l") {
				n++
			}
		}
		t.Fatalf("%s never granted: %v", heavy, order)
		return 0
	}
	if n := lightsBefore("h1"); n > bypass {
		t.Errorf("%d light calls passed h1, want at most MaxBypass = %d (order %v)", n, bypass, order)
	}
	if n := lightsBefore("h2"); n > bypass {
		t.Errorf("%d light calls passed h2, want at most MaxBypass = %d: it was passed by the same ones as h1 (order %v)", n, bypass, order)
	}
	g.finishAll(t, held...)
	for len(g.calls) > 0 {
		for _, x := range g.order() {
			g.finish(x)
		}
	}
}

// A call heavier than math.MaxInt32 on a budget large enough for it waits
// and is granted its whole weight, and gives it back: its record kept the
// weight in 32 bits, so such a call was granted weight mod 2^32 (1 here)
// and its release panicked ("released more permits ... than it holds").
func TestBudgetWaitingCallHeavierThanMaxInt32IsGrantedItsWholeWeight(t *testing.T) {
	const size, heavy = 1 << 40, 1<<32 + 1
	clk := newClock()
	b := newBudget(t, budgetConfig(size, 0, class("only", 0, 0)), clk)
	a, h := mustFlow(t, b, "a", bulkhead.PartnerOptions{}), mustFlow(t, b, "h", bulkhead.PartnerOptions{})
	if acq := a.Call(bulkhead.Class{}, size).AcquirePermissionAsync(); !acq.Granted() {
		t.Fatalf("a: %v", acq.Err())
	}
	ha := h.Call(bulkhead.Class{}, heavy).AcquirePermissionAsync()
	if ha.Err() != bulkhead.ErrPending {
		t.Fatalf("heavy call: %v, want it waiting", ha.Err())
	}
	a.Call(bulkhead.Class{}, size).FinishCall()
	if !ha.Granted() {
		t.Fatalf("heavy call: %v, want it granted", ha.Err())
	}
	if m := b.Metrics(); m.InUse != heavy {
		t.Fatalf("budget holds %d permits, want the heavy call's %d", m.InUse, heavy)
	}
	if msg := panicOf(func() { h.Call(bulkhead.Class{}, heavy).FinishCall() }); msg != "" {
		t.Fatalf("heavy call's FinishCall panicked: %s", msg)
	}
}
