package bulkhead_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rxbulkhead/bulkhead"
)

// Tests of waiting in the budget: deadlines on one timer, NoWait, the queue
// bounds and shedding of lower classes first.

func TestBudgetWaitEndsAtTheClassesMaxWaitDurationOnOneTimer(t *testing.T) {
	clk := newClock()
	cfg := budgetConfig(1, 0, class("hi", 0, 0), class("lo", 0, 0))
	cfg.Classes[0].MaxWaitDuration = time.Second
	cfg.Classes[1].MaxWaitDuration = 3 * time.Second
	b := newBudget(t, cfg, clk)
	hi, lo := mustClass(t, b, "hi"), mustClass(t, b, "lo")
	f := mustFlow(t, b, "f", bulkhead.PartnerOptions{})
	g := newGrantLog(b)
	g.ask("held", f.Call(hi, 1))
	var waiters []*bulkhead.Acquisition
	for range 50 {
		waiters = append(waiters, g.ask("lo", f.Call(lo, 1)))
	}
	hiWaiter := g.ask("hi", f.Call(hi, 1))
	expectOrder(t, g.order(), "held")
	if n := clk.PendingTimers(); n != 1 {
		t.Fatalf("%d timers pending for 51 waiters, want 1", n)
	}
	clk.Advance(time.Second - 1)
	if err := hiWaiter.Err(); err != bulkhead.ErrPending {
		t.Fatalf("hi after 1s-1ns: %v", err)
	}
	clk.Advance(1)
	var be *bulkhead.BudgetError
	if err := hiWaiter.Err(); !errors.As(err, &be) || be.Reason != bulkhead.WaitTimeout || be.Class != "hi" || !errors.Is(err, bulkhead.ErrBulkheadFull) {
		t.Fatalf("hi after 1s: %v, want a *BudgetError (class hi, wait timeout)", err)
	}
	if want := `budget "hub": class "hi" full, does not permit further calls (wait timeout)`; hiWaiter.Err().Error() != want {
		t.Errorf("error %q, want %q", hiWaiter.Err(), want)
	}
	clk.Advance(2 * time.Second)
	for i, a := range waiters {
		if !errors.Is(a.Err(), bulkhead.ErrBulkheadFull) {
			t.Fatalf("lo waiter %d after 3s: %v", i, a.Err())
		}
	}
	if n := clk.PendingTimers(); n != 0 {
		t.Errorf("%d timers pending with nobody waiting", n)
	}
	g.order()
	g.finish("held")
}

func TestBudgetChangedMaxWaitDurationAppliesToCallsAlreadyWaiting(t *testing.T) {
	clk := newClock()
	cfg := budgetConfig(1, 0, class("only", 0, 0))
	b := newBudget(t, cfg, clk)
	f := mustFlow(t, b, "f", bulkhead.PartnerOptions{})
	g := newGrantLog(b)
	g.ask("held", f.Call(bulkhead.Class{}, 1))
	w := g.ask("w", f.Call(bulkhead.Class{}, 1))
	clk.Advance(10 * time.Second)
	cfg.Classes[0].MaxWaitDuration = 5 * time.Second // it has waited 10s already
	if err := b.ChangeConfig(cfg); err != nil {
		t.Fatal(err)
	}
	clk.Advance(0)
	if !errors.Is(w.Err(), bulkhead.ErrBulkheadFull) {
		t.Fatalf("after shortening the wait below what it waited: %v", w.Err())
	}
	w2 := g.ask("w2", f.Call(bulkhead.Class{}, 1))
	cfg.Classes[0].MaxWaitDuration = bulkhead.NoTimeout
	if err := b.ChangeConfig(cfg); err != nil {
		t.Fatal(err)
	}
	if n := clk.PendingTimers(); n != 0 {
		t.Errorf("%d timers pending for a wait without bound", n)
	}
	clk.Advance(time.Hour)
	if w2.Err() != bulkhead.ErrPending {
		t.Fatalf("NoTimeout waiter after an hour: %v", w2.Err())
	}
	g.finish("held")
	g.order()
	g.finish("w2")
}

func TestBudgetClassThatNeverWaitsIsGrantedOnlyIfItComesFirstAndFits(t *testing.T) {
	clk := newClock()
	cfg := budgetConfig(4, 0, bulkhead.ClassConfig{Name: "now"}, class("batch", 0, 0))
	b := newBudget(t, cfg, clk)
	now, batch := mustClass(t, b, "now"), mustClass(t, b, "batch")
	f := mustFlow(t, b, "f", bulkhead.PartnerOptions{})
	g := newGrantLog(b)
	g.ask("b1", f.Call(batch, 2))
	g.ask("b2", f.Call(batch, 4)) // waits: 2 free
	g.ask("n1", f.Call(now, 1))   // first in line (higher class) and fits
	g.ask("n2", f.Call(now, 2))   // does not fit
	got := g.order()
	expectOrder(t, got[:2], "b1", "n1")
	if len(got) != 3 || !strings.HasPrefix(got[2], "n2:") || !strings.Contains(got[2], "(no wait)") {
		t.Fatalf("outcomes %v, want n2 rejected with no wait", got)
	}
	g.finishAll(t, "b1", "n1")
	expectOrder(t, g.order(), "b2")
	g.finish("b2")
}

func TestBudgetClassQueueBoundRejectsNewcomers(t *testing.T) {
	clk := newClock()
	cfg := budgetConfig(1, 0, class("only", 0, 0))
	cfg.Classes[0].MaxQueuedCalls = 2
	b := newBudget(t, cfg, clk)
	f := mustFlow(t, b, "f", bulkhead.PartnerOptions{})
	g := newGrantLog(b)
	g.ask("held", f.Call(bulkhead.Class{}, 1))
	g.ask("w1", f.Call(bulkhead.Class{}, 1))
	g.ask("w2", f.Call(bulkhead.Class{}, 1))
	full := g.ask("w3", f.Call(bulkhead.Class{}, 1))
	var be *bulkhead.BudgetError
	if !errors.As(full.Err(), &be) || be.Reason != bulkhead.QueueFull {
		t.Fatalf("third waiter: %v, want QueueFull", full.Err())
	}
	g.order()
	for _, x := range []string{"held", "w1", "w2"} {
		g.finish(x)
	}
}

func TestBudgetFullQueueShedsTheLowestClassFirst(t *testing.T) {
	clk := newClock()
	cfg := budgetConfig(1, 0, class("crit", 0, 0), class("normal", 0, 0), class("batch", 0, 0))
	cfg.MaxQueuedCalls = 3
	b := newBudget(t, cfg, clk)
	crit, normal, batch := mustClass(t, b, "crit"), mustClass(t, b, "normal"), mustClass(t, b, "batch")
	f := mustFlow(t, b, "f", bulkhead.PartnerOptions{})
	g := newGrantLog(b)
	g.ask("held", f.Call(crit, 1))
	g.ask("batch1", f.Call(batch, 1))
	g.ask("batch2", f.Call(batch, 1))
	g.ask("normal1", f.Call(normal, 1))
	expectOrder(t, g.order(), "held")
	g.ask("crit1", f.Call(crit, 1)) // evicts the newest of the lowest class
	g.ask("normal2", f.Call(normal, 1))
	g.ask("batch3", f.Call(batch, 1)) // nothing below batch: rejected
	g.ask("normal3", f.Call(normal, 1))
	want := []string{
		`batch2:budget "hub": class "batch" full, does not permit further calls (evicted)`,
		`batch1:budget "hub": class "batch" full, does not permit further calls (evicted)`,
		`batch3:budget "hub": class "batch" full, does not permit further calls (queue full)`,
		`normal3:budget "hub": class "normal" full, does not permit further calls (queue full)`,
	}
	expectOrder(t, g.order(), want...)
	for _, x := range []string{"held", "crit1", "normal1", "normal2"} {
		g.finish(x)
		g.order()
	}
}
