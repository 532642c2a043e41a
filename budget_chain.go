package bulkhead

import (
	"fmt"
	"strings"
	"sync"
)

// The order of budgets. A call of a partner built on another budget's
// partner takes that budget's permits first, then its own budget's: it
// holds the first while it waits for the second. Budget.before records
// these waits as edges of a graph, a → b for every a in b.before: a call
// can hold a's permits while it waits for b's. Partner refuses a join that
// would close a cycle a → … → a, since the budgets of a cycle can wait for
// each other (each full, each call holding the permits the next one waits
// for) until the waits time out, which they never do in a class with
// NoTimeout.
//
// budgetOrderMu guards every Budget.before. It is one mutex for the whole
// graph because a join reads the edges of every budget reachable from its
// own and must check and record atomically: two joins that each close half
// of a cycle (a → b and b → a) are serialized, so the second sees the
// first's edge. Lock order: budgetOrderMu is taken only by Partner, under
// no other lock, and join takes the budget's mu under it; no code holding a
// budget's mu, or running a partner's callbacks, takes budgetOrderMu.
//
// Edges are never removed: a partner cannot leave its budget (an idle
// partner's flow may be dropped, but the BudgetPartner keeps working and
// its calls still take the same budgets in the same order), so an edge is
// valid as long as both budgets exist. b.before keeps the budgets in it
// reachable, as b's partners that built the edges do through their
// bulkheads.
var budgetOrderMu sync.Mutex

// chainBudgets returns the budgets whose permits a call of bh holds when
// bh has granted it: those of the BudgetPartner bh is (or a BudgetCall of
// one) and of the partners it is built on, nearest first. It returns nil
// for any other bulkhead.
func chainBudgets(bh Bulkhead) []*Budget {
	var out []*Budget
	for bh != nil {
		var p *BudgetPartner
		switch x := bh.(type) {
		case *BudgetPartner:
			p = x
		case BudgetCall:
			p = x.p
		case *BudgetCall:
			if x != nil {
				p = x.p
			}
		}
		if p == nil {
			break
		}
		out = append(out, p.b)
		bh = p.part
	}
	return out
}

// partnerInOrder is Partner for a bh whose calls hold the budgets of chain
// (chainBudgets, b not among them): it refuses the join if a call holding
// b's permits can already wait, directly or down a path of budgets, for
// one of chain's, and otherwise joins and records chain → b.
func (b *Budget) partnerInOrder(bh Bulkhead, chain []*Budget, opts PartnerOptions) (*BudgetPartner, error) {
	budgetOrderMu.Lock()
	defer budgetOrderMu.Unlock()
	for _, a := range chain {
		if path := b.pathTo(a); path != nil {
			return nil, fmt.Errorf("budget %q: Partner called with a bulkhead (%q) whose calls hold permits of budget %q while they wait for this one, and calls holding this budget's permits can wait for %q (%s, each holding the permits of one while it waits for the next): the budgets could wait for each other",
				b.name, bh.Name(), a.name, a.name, formatBudgetPath(path))
		}
	}
	p, err := b.join(bh.Name(), bh, opts)
	if err != nil {
		return nil, err
	}
	for _, a := range chain {
		if !containsBudget(b.before, a) {
			b.before = append(b.before, a)
		}
	}
	return p, nil
}

// pathTo returns a path b → … → a of the recorded edges (b first, a last),
// or nil if there is none. Called with budgetOrderMu held.
func (b *Budget) pathTo(a *Budget) []*Budget {
	// A depth-first search from a against the edges (through before),
	// looking for b; each level appends its budget after the path found
	// below it, so the path comes out b first.
	seen := map[*Budget]bool{a: true}
	var walk func(x *Budget) []*Budget
	walk = func(x *Budget) []*Budget {
		if x == b {
			return []*Budget{x}
		}
		for _, y := range x.before {
			if seen[y] {
				continue
			}
			seen[y] = true
			if path := walk(y); path != nil {
				return append(path, x)
			}
		}
		return nil
	}
	return walk(a)
}

func containsBudget(list []*Budget, x *Budget) bool {
	for _, y := range list {
		if y == x {
			return true
		}
	}
	return false
}

// formatBudgetPath renders a path of budgets as "a" → "b" → "c".
func formatBudgetPath(path []*Budget) string {
	names := make([]string, len(path))
	for i, x := range path {
		names[i] = fmt.Sprintf("%q", x.name)
	}
	return strings.Join(names, " → ")
}
