package bulkhead_test

import (
	"testing"

	"github.com/rxbulkhead/bulkhead"
)

// Tests of who goes next in a contended budget: classes, shares, headroom,
// groups and max-min fairness across partners (docs/design.md, "Who goes
// next").

func TestBudgetCallsThatFitAreGrantedAtOnceWithoutAllocating(t *testing.T) {
	clk := newClock()
	b := newBudget(t, budgetConfig(10, 0, class("only", 0, 0)), clk)
	flow := mustFlow(t, b, "a", bulkhead.PartnerOptions{})
	sem := newSemaphore(t, "p", bulkhead.Config{MaxConcurrentCalls: 5, MaxQueuedCalls: bulkhead.Unbounded}, bulkhead.WithClock(clk))
	partner, err := b.Partner(sem, bulkhead.PartnerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	heavy := flow.Call(bulkhead.Class{}, 3)
	for _, bh := range []bulkhead.Bulkhead{flow, heavy, partner} {
		allocs := testing.AllocsPerRun(100, func() {
			if a := bh.AcquirePermissionAsync(); !a.Granted() {
				t.Fatalf("%s: not granted at once: %v", bh.Name(), a.Err())
			}
			bh.FinishCall()
		})
		if allocs != 0 {
			t.Errorf("%T: AcquirePermissionAsync + FinishCall allocated %.1f times, want 0", bh, allocs)
		}
	}
}

func TestBudgetGrantsWaitersAsPermitsComeBack(t *testing.T) {
	clk := newClock()
	b := newBudget(t, budgetConfig(2, 0, class("only", 0, 0)), clk)
	a, c := mustFlow(t, b, "a", bulkhead.PartnerOptions{}), mustFlow(t, b, "c", bulkhead.PartnerOptions{})
	g := newGrantLog(b)
	g.ask("a1", a.Call(bulkhead.Class{}, 1))
	g.ask("a2", a.Call(bulkhead.Class{}, 1))
	g.ask("c1", c.Call(bulkhead.Class{}, 1))
	g.ask("c2", c.Call(bulkhead.Class{}, 1))
	expectOrder(t, g.order(), "a1", "a2")
	if m := b.Metrics(); m.InUse != 2 || m.Queued != 2 || m.Free != 0 {
		t.Fatalf("metrics %+v, want 2 in use, 2 queued", m)
	}
	g.finish("a1")
	expectOrder(t, g.order(), "c1")
	g.finish("a2")
	expectOrder(t, g.order(), "c2")
	g.finishAll(t, "c1", "c2")
}

func TestBudgetHigherClassGoesBeforeALowerOneThatWaitedLonger(t *testing.T) {
	clk := newClock()
	b := newBudget(t, budgetConfig(1, 0, class("hi", 0, 0), class("lo", 0, 0)), clk)
	hi, lo := mustClass(t, b, "hi"), mustClass(t, b, "lo")
	f := mustFlow(t, b, "f", bulkhead.PartnerOptions{})
	g := newGrantLog(b)
	g.ask("held", f.Call(lo, 1))
	g.ask("lo", f.Call(lo, 1))
	g.ask("hi", f.Call(hi, 1))
	expectOrder(t, g.order(), "held")
	g.finish("held")
	expectOrder(t, g.order(), "hi")
	g.finish("hi")
	expectOrder(t, g.order(), "lo")
	g.finish("lo")
}

func TestBudgetClassBelowItsShareGoesBeforeHigherClasses(t *testing.T) {
	clk := newClock()
	b := newBudget(t, budgetConfig(3, 0, class("hi", 0, 0), class("lo", 1, 0)), clk)
	hi, lo := mustClass(t, b, "hi"), mustClass(t, b, "lo")
	f := mustFlow(t, b, "f", bulkhead.PartnerOptions{})
	g := newGrantLog(b)
	g.ask("h1", f.Call(hi, 1))
	g.ask("h2", f.Call(hi, 1))
	g.ask("h3", f.Call(hi, 1)) // the low class's share is lent while it is unused
	g.ask("h4", f.Call(hi, 1))
	g.ask("l1", f.Call(lo, 1))
	g.ask("l2", f.Call(lo, 1))
	expectOrder(t, g.order(), "h1", "h2", "h3")
	g.finish("h1")
	expectOrder(t, g.order(), "l1") // below its share of 1: before the high class
	g.finish("h2")
	expectOrder(t, g.order(), "h4") // at its share: priority again
	g.finish("h3")
	expectOrder(t, g.order(), "l2")
	g.finishAll(t, "h4", "l1", "l2")
}

func TestBudgetLowerClassesLeaveTheHeadroomOfHigherOnesFree(t *testing.T) {
	clk := newClock()
	b := newBudget(t, budgetConfig(4, 0, class("crit", 0, 2), class("batch", 0, 0)), clk)
	crit, batch := mustClass(t, b, "crit"), mustClass(t, b, "batch")
	f := mustFlow(t, b, "f", bulkhead.PartnerOptions{})
	g := newGrantLog(b)
	for _, l := range []string{"b1", "b2", "b3"} {
		g.ask(l, f.Call(batch, 1))
	}
	expectOrder(t, g.order(), "b1", "b2")
	if m := b.Metrics(); m.Free != 2 || m.Queued != 1 {
		t.Fatalf("metrics %+v: the batch class took the headroom", m)
	}
	g.ask("c1", f.Call(crit, 1))
	g.ask("c2", f.Call(crit, 1))
	expectOrder(t, g.order(), "c1", "c2") // at once, while the batch call waits
	g.finish("c1")
	if got := g.order(); len(got) != 0 {
		t.Fatalf("%v granted into the headroom", got)
	}
	g.finish("b1")
	if got := g.order(); len(got) != 0 {
		t.Fatalf("%v granted with only the headroom free", got)
	}
	g.finish("c2")
	expectOrder(t, g.order(), "b3")
	g.finishAll(t, "b2", "b3")
}

func TestBudgetLowerClassMayUseHeadroomForWhatItMissesOfItsShare(t *testing.T) {
	clk := newClock()
	b := newBudget(t, budgetConfig(4, 0, class("crit", 0, 2), class("batch", 3, 0)), clk)
	batch := mustClass(t, b, "batch")
	f := mustFlow(t, b, "f", bulkhead.PartnerOptions{})
	g := newGrantLog(b)
	for _, l := range []string{"b1", "b2", "b3", "b4"} {
		g.ask(l, f.Call(batch, 1))
	}
	expectOrder(t, g.order(), "b1", "b2", "b3") // its share of 3 goes into the headroom of 2 by 1
	g.finishAll(t, "b1")
	expectOrder(t, g.order(), "b4")
	g.finishAll(t, "b2", "b3", "b4")
}

func TestBudgetPartnerHoldingFewerPermitsGoesFirst(t *testing.T) {
	clk := newClock()
	b := newBudget(t, budgetConfig(4, 0, class("only", 0, 0)), clk)
	a, c := mustFlow(t, b, "a", bulkhead.PartnerOptions{}), mustFlow(t, b, "c", bulkhead.PartnerOptions{})
	g := newGrantLog(b)
	for _, l := range []string{"a1", "a2", "a3"} {
		g.ask(l, a.Call(bulkhead.Class{}, 1))
	}
	g.ask("c1", c.Call(bulkhead.Class{}, 1))
	g.ask("a4", a.Call(bulkhead.Class{}, 1)) // waits longest
	g.ask("c2", c.Call(bulkhead.Class{}, 1))
	expectOrder(t, g.order(), "a1", "a2", "a3", "c1")
	g.finish("a1") // a holds 2, c 1: c first
	expectOrder(t, g.order(), "c2")
	g.finish("a2") // a holds 1, c 2
	expectOrder(t, g.order(), "a4")
	g.finishAll(t, "a3", "a4", "c1", "c2")
}

// With three partners that each want more than a third, the budget
// converges to a third each, whoever held it first (max-min fairness).
func TestBudgetDividesAContendedBudgetEquallyAmongPartnersThatWantMore(t *testing.T) {
	clk := newClock()
	b := newBudget(t, budgetConfig(12, 0, class("only", 0, 0)), clk)
	names := []string{"a", "b", "c"}
	held := map[string][]bulkhead.BudgetCall{}
	var granted []string
	for _, n := range names {
		f := mustFlow(t, b, n, bulkhead.PartnerOptions{})
		for range 20 {
			c := f.Call(bulkhead.Class{}, 1)
			c.AcquirePermissionAsync().OnDone(func(err error) {
				if err == nil {
					held[n] = append(held[n], c)
					granted = append(granted, n)
				}
			})
		}
	}
	if len(held["a"]) != 12 {
		t.Fatalf("a holds %d, want all 12 (it came first into an idle budget)", len(held["a"]))
	}
	// a's calls finish one by one; every permit goes to whoever holds least.
	for range 8 {
		c := held["a"][0]
		held["a"] = held["a"][1:]
		c.FinishCall()
	}
	for _, n := range names {
		if len(held[n]) != 4 {
			t.Errorf("%s holds %d, want 4 of 12 (held: a %d, b %d, c %d)", n, len(held[n]), len(held["a"]), len(held["b"]), len(held["c"]))
		}
	}
	// Drain: cancel nothing, just let everything run to the end.
	for len(granted) > 0 {
		n := granted[0]
		granted = granted[1:]
		if len(held[n]) == 0 {
			continue
		}
		c := held[n][0]
		held[n] = held[n][1:]
		c.FinishCall()
	}
}

func TestBudgetGroupBelowItsNominalGoesFirstWithinItsClass(t *testing.T) {
	clk := newClock()
	cfg := budgetConfig(3, 0, class("only", 0, 0))
	cfg.Groups = []bulkhead.GroupConfig{{Name: "gold", Nominal: 2, Lendable: 2, BorrowingLimit: bulkhead.Unbounded}}
	b := newBudget(t, cfg, clk)
	gold := mustFlow(t, b, "gold-partner", bulkhead.PartnerOptions{Group: "gold"})
	x, y := mustFlow(t, b, "x", bulkhead.PartnerOptions{}), mustFlow(t, b, "y", bulkhead.PartnerOptions{})
	g := newGrantLog(b)
	g.ask("g1", gold.Call(bulkhead.Class{}, 1))
	g.ask("x1", x.Call(bulkhead.Class{}, 1)) // gold's lendable share is lent
	g.ask("x2", x.Call(bulkhead.Class{}, 1))
	g.ask("y1", y.Call(bulkhead.Class{}, 1)) // holds nothing: first by max-min alone
	g.ask("g2", gold.Call(bulkhead.Class{}, 1))
	expectOrder(t, g.order(), "g1", "x1", "x2")
	g.finish("x1")
	expectOrder(t, g.order(), "g2") // gold holds 1 of its nominal 2: it gets it back first
	g.finish("x2")
	expectOrder(t, g.order(), "y1")
	g.finishAll(t, "g1", "g2", "y1")
}

func TestBudgetKeepsAGroupsReserveFreeForIt(t *testing.T) {
	clk := newClock()
	cfg := budgetConfig(4, 0, class("only", 0, 0))
	cfg.Groups = []bulkhead.GroupConfig{{Name: "gold", Nominal: 2, Lendable: 0, BorrowingLimit: 0}}
	b := newBudget(t, cfg, clk)
	gold := mustFlow(t, b, "gold-partner", bulkhead.PartnerOptions{Group: "gold"})
	x := mustFlow(t, b, "x", bulkhead.PartnerOptions{})
	g := newGrantLog(b)
	for _, l := range []string{"x1", "x2", "x3"} {
		g.ask(l, x.Call(bulkhead.Class{}, 1))
	}
	expectOrder(t, g.order(), "x1", "x2")
	if m := b.Metrics(); m.Groups[0].Reserved != 2 || m.Free != 2 {
		t.Fatalf("metrics %+v: want gold's 2 reserved permits free", m)
	}
	g.ask("g1", gold.Call(bulkhead.Class{}, 2)) // at once, although x waits
	g.ask("g2", gold.Call(bulkhead.Class{}, 1)) // its limit is its nominal
	expectOrder(t, g.order(), "g1")
	g.finish("x1")
	expectOrder(t, g.order(), "x3")
	g.finish("g1")
	expectOrder(t, g.order(), "g2")
	g.finishAll(t, "x2", "x3", "g2")
}

func TestBudgetGroupAtItsBorrowingLimitWaitsWithoutHoldingOthersBack(t *testing.T) {
	clk := newClock()
	cfg := budgetConfig(10, 0, class("only", 0, 0))
	cfg.Groups = []bulkhead.GroupConfig{{Name: "gold", Nominal: 1, Lendable: 1, BorrowingLimit: 1}}
	b := newBudget(t, cfg, clk)
	gold := mustFlow(t, b, "gold-partner", bulkhead.PartnerOptions{Group: "gold"})
	x := mustFlow(t, b, "x", bulkhead.PartnerOptions{})
	g := newGrantLog(b)
	g.ask("g1", gold.Call(bulkhead.Class{}, 1))
	g.ask("g2", gold.Call(bulkhead.Class{}, 1))
	g.ask("g3", gold.Call(bulkhead.Class{}, 1)) // above Nominal + BorrowingLimit = 2
	g.ask("x1", x.Call(bulkhead.Class{}, 5))
	expectOrder(t, g.order(), "g1", "g2", "x1")
	g.finish("x1")
	if got := g.order(); len(got) != 0 {
		t.Fatalf("%v granted while gold is at its limit", got)
	}
	g.finish("g1")
	expectOrder(t, g.order(), "g3")
	g.finishAll(t, "g2", "g3")
}
