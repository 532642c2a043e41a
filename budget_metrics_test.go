package bulkhead_test

import (
	"testing"
	"time"

	"github.com/rxbulkhead/bulkhead"
)

// TestBudgetGroupQueuedCountsTheGroupsCallsWaitingInTheBudget follows
// GroupMetrics.Queued through every way a call enters and leaves the
// budget's queue (arrival, Cancel, a grant by a release, an expiry), and
// checks it each time against the calls the test itself sees pending: a
// call that waits for its partner's permit is not in the budget yet, the
// calls of partners without a group are in BudgetMetrics.Queued only, and
// a group dropped by ChangeConfig leaves Groups.
func TestBudgetGroupQueuedCountsTheGroupsCallsWaitingInTheBudget(t *testing.T) {
	clk := newClock()
	cfg := budgetConfig(2, 0, class("normal", 0, 0))
	cfg.Groups = []bulkhead.GroupConfig{
		{Name: "gold", BorrowingLimit: bulkhead.Unbounded},
		{Name: "silver", BorrowingLimit: bulkhead.Unbounded},
	}
	b := newBudget(t, cfg, clk)
	none := mustFlow(t, b, "none", bulkhead.PartnerOptions{})
	gold := mustFlow(t, b, "gold", bulkhead.PartnerOptions{Group: "gold"})
	sem := newSemaphore(t, "silver", bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Hour, MaxQueuedCalls: bulkhead.Unbounded}, bulkhead.WithClock(clk))
	silver, err := b.Partner(sem, bulkhead.PartnerOptions{Group: "silver"})
	if err != nil {
		t.Fatal(err)
	}

	type call struct {
		group string
		c     bulkhead.BudgetCall
		a     *bulkhead.Acquisition
	}
	var calls []*call
	ask := func(group string, p *bulkhead.BudgetPartner) *call {
		c := &call{group: group, c: p.Call(bulkhead.Class{}, 1)}
		c.a = c.c.AcquirePermissionAsync()
		calls = append(calls, c)
		return c
	}
	// check compares the metrics with the calls pending, minus the
	// silver calls waiting for their partner's permit.
	check := func(step string, groups ...string) {
		t.Helper()
		want := map[string]int{}
		inPartner := sem.Metrics().QueuedCalls
		total := -inPartner
		for _, c := range calls {
			if c.a.Err() == bulkhead.ErrPending {
				want[c.group]++
				total++
			}
		}
		want["silver"] -= inPartner
		m := b.Metrics()
		if m.Queued != total {
			t.Fatalf("%s: Queued %d, want %d (%+v)", step, m.Queued, total, m)
		}
		var got []string
		sum := 0
		for _, g := range m.Groups {
			got = append(got, g.Name)
			sum += g.Queued
			if g.Queued != want[g.Name] {
				t.Fatalf("%s: group %q Queued %d, want %d (%+v)", step, g.Name, g.Queued, want[g.Name], m.Groups)
			}
		}
		if len(got) != len(groups) {
			t.Fatalf("%s: groups %v, want %v", step, got, groups)
		}
		if sum+want[""] != m.Queued {
			t.Fatalf("%s: the groups' Queued (%d) and the calls without a group (%d) are not the budget's (%d)", step, sum, want[""], m.Queued)
		}
	}

	held := []*call{ask("", none), ask("", none)} // the budget is full
	check("full", "gold", "silver")
	g1, g2 := ask("gold", gold), ask("gold", gold)
	s1 := ask("silver", silver)
	s2 := ask("silver", silver) // waits for silver's permit, which s1 holds
	n1 := ask("", none)
	if s1.a.Err() != bulkhead.ErrPending || s2.a.Err() != bulkhead.ErrPending || sem.Metrics().InFlightCalls != 1 {
		t.Fatalf("silver calls %v %v, partner %+v: want both pending, one holding the partner's permit", s1.a.Err(), s2.a.Err(), sem.Metrics())
	}
	check("queued", "gold", "silver")
	if m := b.Metrics(); m.Groups[0].Queued != 2 || m.Groups[1].Queued != 1 {
		t.Fatalf("queued: groups %+v, want gold 2 and silver 1", m.Groups)
	}

	if !g2.a.Cancel() {
		t.Fatal("Cancel of a queued gold call failed")
	}
	check("after a cancel", "gold", "silver")

	for _, c := range held { // two grants
		c.c.FinishCall()
	}
	held = nil
	for _, c := range []*call{g1, s1, n1} {
		if c.a.Granted() {
			held = append(held, c)
		}
	}
	if len(held) != 2 {
		t.Fatalf("%d grants after two permits came back, want 2", len(held))
	}
	check("after the grants", "gold", "silver") // s2 in the budget if s1 was granted
	g3 := ask("gold", gold)                     // the budget is full again
	check("another gold call", "gold", "silver")

	cfg.Groups = cfg.Groups[:1]
	if err := b.ChangeConfig(cfg); err != nil {
		t.Fatal(err)
	}
	check("silver dropped", "gold")

	clk.Advance(time.Minute) // every wait in the budget so far expires
	if err := g3.a.Err(); err == nil || err == bulkhead.ErrPending {
		t.Fatalf("a gold call waited a minute: %v, want a rejection", err)
	}
	check("after the expiries", "gold") // s2 may have entered the budget since, if s1 expired
	if m := b.Metrics(); m.Groups[0].Queued != 0 {
		t.Fatalf("after the expiries: %+v, want no gold call queued", m.Groups)
	}
	for _, c := range held {
		c.c.FinishCall()
	}
	if s2.a.Cancel() {
		check("s2 cancelled", "gold")
	} else if s2.a.Granted() {
		s2.c.FinishCall()
	}
}
