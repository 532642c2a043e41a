package bulkhead_test

import (
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/testkit"
)

// newBudget builds a Budget on clk or fails the test, and checks at cleanup
// that no permit is held and nobody waits (the budget's leak check).
func newBudget(t testing.TB, cfg bulkhead.BudgetConfig, clk bulkhead.Clock) *bulkhead.Budget {
	t.Helper()
	b, err := bulkhead.NewBudget("hub", cfg, bulkhead.WithClock(clk))
	if err != nil {
		t.Fatalf("NewBudget(%+v): %v", cfg, err)
	}
	testkit.CheckBudget(t, b)
	return b
}

// class is one waiting class with the given share and headroom, no queue
// bound, and a wait of a minute.
func class(name string, share, headroom int) bulkhead.ClassConfig {
	return bulkhead.ClassConfig{Name: name, Share: share, Headroom: headroom, MaxWaitDuration: time.Minute, MaxQueuedCalls: bulkhead.Unbounded}
}

// budgetConfig is a budget of size permits with classes, no queue bound.
func budgetConfig(size, bypass int, classes ...bulkhead.ClassConfig) bulkhead.BudgetConfig {
	return bulkhead.BudgetConfig{Size: size, Classes: classes, MaxQueuedCalls: bulkhead.Unbounded, MaxBypass: bypass}
}

func newClock() *testkit.VirtualClock { return testkit.NewVirtualClock(time.Unix(1_700_000_000, 0)) }

// mustClass returns b's class named name.
func mustClass(t testing.TB, b *bulkhead.Budget, name string) bulkhead.Class {
	t.Helper()
	c, err := b.Class(name)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// mustFlow joins a flow (a partner without a bulkhead) named name.
func mustFlow(t testing.TB, b *bulkhead.Budget, name string, opts bulkhead.PartnerOptions) *bulkhead.BudgetPartner {
	t.Helper()
	p, err := b.Flow(name, opts)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// grantLog records the labels of the calls decided, in the order the
// budget decided them ("label:error" for a rejection), and holds the calls
// to release them. A call queued in the budget is recorded by the budget's
// decided hook on the deciding goroutine (the callbacks of the calls one
// pass decides run on several goroutines, in any order); a call decided
// without being queued (at once, or by its partner) by its callback.
type grantLog struct {
	mu    sync.Mutex
	seq   []*logged
	byAcq map[*bulkhead.Acquisition]*logged
	calls map[string]bulkhead.BudgetCall
}

// logged is one decided call; label is empty while the hook has seen its
// Acquisition before ask returned it.
type logged struct {
	label    string
	a        *bulkhead.Acquisition
	recorded bool // in seq now or earlier
}

func newGrantLog(b *bulkhead.Budget) *grantLog {
	g := &grantLog{byAcq: map[*bulkhead.Acquisition]*logged{}, calls: map[string]bulkhead.BudgetCall{}}
	bulkhead.SetBudgetDecidedHook(b, func(a *bulkhead.Acquisition) {
		g.mu.Lock()
		defer g.mu.Unlock()
		l := g.byAcq[a]
		if l == nil {
			l = &logged{a: a}
			g.byAcq[a] = l
		}
		l.recorded = true
		g.seq = append(g.seq, l)
	})
	return g
}

// ask starts c under label and records its outcome when it is decided.
func (g *grantLog) ask(label string, c bulkhead.BudgetCall) *bulkhead.Acquisition {
	a := c.AcquirePermissionAsync()
	g.mu.Lock()
	g.calls[label] = c
	l := g.byAcq[a]
	if l == nil || l.label != "" { // new, or an Acquisition shared by calls decided at once
		l = &logged{a: a}
		g.byAcq[a] = l
	}
	l.label = label
	g.mu.Unlock()
	a.OnDone(func(error) {
		g.mu.Lock()
		defer g.mu.Unlock()
		if !l.recorded { // not by the hook: decided without being queued
			l.recorded = true
			g.seq = append(g.seq, l)
		}
	})
	return a
}

// finish gives back the permits of the call asked under label.
func (g *grantLog) finish(label string) {
	g.mu.Lock()
	c := g.calls[label]
	delete(g.calls, label)
	g.mu.Unlock()
	c.FinishCall()
}

// order returns the labels of the calls decided since the last call, in
// decision order, and forgets them.
func (g *grantLog) order() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	var s []string
	for _, l := range g.seq {
		delete(g.byAcq, l.a)
		if l.label == "" {
			continue // a call the test made without ask
		}
		if err := l.a.Err(); err != nil {
			s = append(s, l.label+":"+err.Error())
		} else {
			s = append(s, l.label)
		}
	}
	g.seq = nil
	return s
}

// finishAll gives back every granted call still held.
func (g *grantLog) finishAll(t testing.TB, granted ...string) {
	for _, l := range granted {
		g.finish(l)
	}
}

func expectOrder(t testing.TB, got []string, want ...string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("granted in order %s, want %s", strings.Join(got, " "), strings.Join(want, " "))
	}
}
