package bulkhead_test

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/rxbulkhead/bulkhead"
)

// Tests of the order of budgets: a partner built on another budget's
// partner takes that budget's permits first, and Partner refuses a join
// that would let two budgets wait for each other (budget_chain.go).

// namedBudget is a one-class budget of one permit named name.
func namedBudget(t *testing.T, name string) *bulkhead.Budget {
	t.Helper()
	b, err := bulkhead.NewBudget(name, budgetConfig(1, 0, class("only", 0, 0)), bulkhead.WithClock(newClock()))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// chainOn joins a new semaphore named name to the budgets in order: the
// first budget's partner is built on the semaphore, each next one's on the
// previous partner, so that a call takes the budgets' permits in that
// order. It returns the last partner.
func chainOn(t *testing.T, name string, budgets ...*bulkhead.Budget) *bulkhead.BudgetPartner {
	t.Helper()
	var bh bulkhead.Bulkhead = newSemaphore(t, name, partnerConfig(5))
	var p *bulkhead.BudgetPartner
	for _, b := range budgets {
		var err error
		if p, err = b.Partner(bh, bulkhead.PartnerOptions{}); err != nil {
			t.Fatalf("joining %q to budget %q: %v", bh.Name(), b.Name(), err)
		}
		bh = p
	}
	return p
}

// wantCycleError checks that err is Partner's refusal of a join to b of
// the bulkhead named bh, whose calls hold budget a, with path the path of
// budgets from b to a.
func wantCycleError(t *testing.T, p *bulkhead.BudgetPartner, err error, b, bh, a, path string) {
	t.Helper()
	want := fmt.Sprintf(`budget %q: Partner called with a bulkhead (%q) whose calls hold permits of budget %q while they wait for this one, and calls holding this budget's permits can wait for %q (%s, each holding the permits of one while it waits for the next): the budgets could wait for each other`, b, bh, a, a, path)
	if p != nil || err == nil || err.Error() != want {
		t.Fatalf("Partner = %v, %v;\nwant the error %s", p, err, want)
	}
}

func TestBudgetPartnerRefusesTwoBudgetsThatWouldWaitForEachOther(t *testing.T) {
	a, b := namedBudget(t, "a"), namedBudget(t, "b")
	chainOn(t, "x", a, b) // calls of x take a, then b
	before := a.Metrics().Partners

	// calls of y would take b, then a
	viaB := chainOn(t, "y", b)
	got, err := a.Partner(viaB, bulkhead.PartnerOptions{})
	wantCycleError(t, got, err, "a", "y", "b", `"a" → "b"`)
	if n := a.Metrics().Partners; n != before {
		t.Errorf("the refused partner joined: %d partners, want %d", n, before)
	}
	// the same through a BudgetCall of the partner, and one level deeper
	got, err = a.Partner(viaB.Call(bulkhead.Class{}, 1), bulkhead.PartnerOptions{})
	wantCycleError(t, got, err, "a", "y", "b", `"a" → "b"`)
	c := namedBudget(t, "c")
	deep := chainOn(t, "z", c, b) // takes c, then b
	got, err = a.Partner(deep, bulkhead.PartnerOptions{})
	wantCycleError(t, got, err, "a", "z", "b", `"a" → "b"`)

	// The refusals recorded nothing: a before b joins again (a recorded
	// b → a would make it a cycle), and c, which a's calls never wait
	// for, may come before a.
	chainOn(t, "x2", a, b)
	if _, err := a.Partner(chainOn(t, "w", c), bulkhead.PartnerOptions{}); err != nil {
		t.Fatalf("c before a, with no path from a to c: %v", err)
	}
}

func TestBudgetPartnerRefusesAThreeBudgetCycle(t *testing.T) {
	a, b, c := namedBudget(t, "a"), namedBudget(t, "b"), namedBudget(t, "c")
	chainOn(t, "x", a, b) // a before b
	chainOn(t, "y", b, c) // b before c
	// c before a closes a → b → c → a
	got, err := a.Partner(chainOn(t, "z", c), bulkhead.PartnerOptions{})
	wantCycleError(t, got, err, "a", "z", "c", `"a" → "b" → "c"`)
	// and so does c before b, or b before a
	got, err = b.Partner(chainOn(t, "v", c), bulkhead.PartnerOptions{})
	wantCycleError(t, got, err, "b", "v", "c", `"b" → "c"`)
	got, err = a.Partner(chainOn(t, "u", b), bulkhead.PartnerOptions{})
	wantCycleError(t, got, err, "a", "u", "b", `"a" → "b"`)
	// a before c is the order already in force
	if _, err := c.Partner(chainOn(t, "t", a), bulkhead.PartnerOptions{}); err != nil {
		t.Fatalf("a before c: %v", err)
	}
}

// Two chains from one budget to another through different budgets, in the
// same order, cannot wait for each other: Partner accepts them.
func TestBudgetPartnerAcceptsADiamondOfChainsInOneOrder(t *testing.T) {
	bottom, left, right, top := namedBudget(t, "bottom"), namedBudget(t, "left"), namedBudget(t, "right"), namedBudget(t, "top")
	chainOn(t, "x", bottom, left, top)
	chainOn(t, "y", bottom, right, top)
	chainOn(t, "z", bottom, top)
	chainOn(t, "w", left, right) // left before right: still no cycle
	chainOn(t, "v", bottom, left, right, top)
	p := chainOn(t, "u", left, top)
	if a := p.AcquirePermissionAsync(); !a.Granted() {
		t.Fatalf("a call through left and top: %v", a.Err())
	}
	p.FinishCall()
	// right before left would now close left → right → left
	got, err := left.Partner(chainOn(t, "t", right), bulkhead.PartnerOptions{})
	wantCycleError(t, got, err, "left", "t", "right", `"left" → "right"`)
}

// A join that fails for another reason records no order.
func TestBudgetPartnerThatFailsRecordsNoOrder(t *testing.T) {
	a, b := namedBudget(t, "a"), namedBudget(t, "b")
	_, err := b.Partner(chainOn(t, "x", a), bulkhead.PartnerOptions{Group: "none"})
	if ce := (*bulkhead.ConfigError)(nil); !errors.As(err, &ce) {
		t.Fatalf("Partner with an unknown group: %v, want a *ConfigError", err)
	}
	if _, err := a.Partner(chainOn(t, "y", b), bulkhead.PartnerOptions{}); err != nil {
		t.Fatalf("b before a after a failed join of a before b: %v", err)
	}
}

// Joins on several goroutines at once, each adding one edge of a ring of
// budgets (budget i before budget i+1, the last before the first): any
// n−1 edges are a chain, all n a cycle, so exactly one join must fail
// whatever the interleaving, and the successful ones must leave the
// failed one's order refused.
func TestBudgetPartnerConcurrentJoinsCloseNoCycle(t *testing.T) {
	const n, rounds = 6, 20
	for round := range rounds {
		budgets := make([]*bulkhead.Budget, n)
		links := make([]*bulkhead.BudgetPartner, n)
		for i := range budgets {
			budgets[i] = namedBudget(t, fmt.Sprintf("b%d", i))
			links[i] = chainOn(t, fmt.Sprintf("s%d", i), budgets[i])
		}
		errs := make([]error, n)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				<-start
				_, errs[i] = budgets[(i+1)%n].Partner(links[i], bulkhead.PartnerOptions{})
			})
		}
		close(start)
		wg.Wait()
		failed := -1
		for i, err := range errs {
			if err == nil {
				continue
			}
			if failed >= 0 || !strings.Contains(err.Error(), "the budgets could wait for each other") {
				t.Fatalf("round %d: joins %d and %d failed (%v; %v); want exactly one refused as a cycle", round, failed, i, errs[max(failed, 0)], err)
			}
			failed = i
		}
		if failed < 0 {
			t.Fatalf("round %d: all %d joins of a ring succeeded", round, n)
		}
		// the failed edge is still refused, the budgets' order unchanged
		if _, err := budgets[(failed+1)%n].Partner(chainOn(t, fmt.Sprintf("again%d", round), budgets[failed]), bulkhead.PartnerOptions{}); err == nil {
			t.Fatalf("round %d: the ring's missing edge joined on a second try", round)
		}
	}
}
