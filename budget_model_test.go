package bulkhead_test

import (
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/internal/budgetmodel"
)

// TestBudgetAgreesWithANaiveModel drives a Budget and budgetmodel.Model, a
// naive implementation of the rules of docs/design.md ("Who goes next",
// "Weighted calls: bounded bypass", "Shedding", "Waiting") that keeps no
// heap and no list and recomputes everything by scanning, with the same
// random sequence of operations (calls of random flow, class and weight, Cancel,
// FinishCall, clock advances, ChangeConfig), and compares every call's
// outcome and the metrics after every operation.
//
// -budget.modelseeds sets how many seeds (60 by default, a few seconds
// under -race; make stress-budget runs thousands).
func TestBudgetAgreesWithANaiveModel(t *testing.T) {
	for seed := range uint64(*modelSeeds) {
		runModelSeed(t, seed, 300)
		if t.Failed() {
			return
		}
	}
}

var modelSeeds = flag.Int("budget.modelseeds", 60, "TestBudgetAgreesWithANaiveModel: how many random sequences of 300 operations")

// realCall is a call of the Budget under test and its Acquisition.
type realCall struct {
	call bulkhead.BudgetCall
	a    *bulkhead.Acquisition
}

// realState is the model's name of a real Acquisition's outcome.
func realState(a *bulkhead.Acquisition, released bool) string {
	err := a.Err()
	var be *bulkhead.BudgetError
	switch {
	case err == nil && released:
		return "released"
	case err == nil:
		return "granted"
	case err == bulkhead.ErrPending:
		return "pending"
	case errors.Is(err, bulkhead.ErrCancelled):
		return "cancelled"
	case errors.Is(err, bulkhead.ErrTooHeavy):
		return "rejected:heavy"
	case errors.As(err, &be):
		return "rejected:" + be.Reason.String()
	}
	return "?" + err.Error()
}

func modelConfig(rng *rand.Rand, classes []string) bulkhead.BudgetConfig {
	size := 3 + rng.IntN(8)
	cfg := bulkhead.BudgetConfig{Size: size, MaxQueuedCalls: bulkhead.Unbounded, MaxBypass: rng.IntN(4)}
	if rng.IntN(3) == 0 {
		cfg.MaxQueuedCalls = 1 + rng.IntN(6)
	}
	shares, headroom := 0, 0
	for _, n := range classes {
		c := bulkhead.ClassConfig{Name: n, MaxWaitDuration: time.Duration(1+rng.IntN(5)) * time.Second, MaxQueuedCalls: bulkhead.Unbounded}
		switch rng.IntN(8) {
		case 0:
			c.MaxWaitDuration, c.MaxQueuedCalls = 0, 0
		case 1:
			c.MaxWaitDuration = bulkhead.NoTimeout
		case 2:
			c.MaxQueuedCalls = 1 + rng.IntN(3)
		}
		if rng.IntN(3) == 0 && shares < size {
			c.Share = 1 + rng.IntN(2)
			shares += c.Share
		}
		if rng.IntN(3) == 0 {
			c.Headroom = rng.IntN(2)
			headroom += c.Headroom
		}
		cfg.Classes = append(cfg.Classes, c)
	}
	rng.Shuffle(len(cfg.Classes), func(i, j int) { cfg.Classes[i], cfg.Classes[j] = cfg.Classes[j], cfg.Classes[i] })
	gold := rng.IntN(3)
	cfg.Groups = []bulkhead.GroupConfig{
		{Name: "gold", Nominal: gold, Lendable: rng.IntN(gold + 1), BorrowingLimit: 1 + rng.IntN(size)},
		{Name: "silver", Nominal: 0, BorrowingLimit: 1 + rng.IntN(size)},
	}
	if cfg.Validate() != nil {
		cfg.Groups[0].Lendable = gold
		for i := range cfg.Classes {
			cfg.Classes[i].Share, cfg.Classes[i].Headroom = 0, 0
		}
	}
	if err := cfg.Validate(); err != nil {
		panic(err)
	}
	return cfg
}

func runModelSeed(t *testing.T, seed uint64, steps int) {
	rng := rand.New(rand.NewPCG(seed, 99))
	classes := []string{"a", "b", "c"}
	cfg := modelConfig(rng, classes)
	clk := newClock()
	start := clk.Now()
	b, err := bulkhead.NewBudget("hub", cfg, bulkhead.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	groups := []string{"", "", "gold", "gold", "silver"}
	m := budgetmodel.New(cfg, groups)
	var flows []*bulkhead.BudgetPartner
	for i, g := range groups {
		f, err := b.Flow(fmt.Sprint("f", i), bulkhead.PartnerOptions{Group: g})
		if err != nil {
			t.Fatal(err)
		}
		flows = append(flows, f)
	}
	real := map[int]realCall{}
	var log []string
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("seed %d: "+format+"\nsteps:\n%s", append(append([]any{seed}, args...), fmt.Sprint(log))...)
	}
	for step := range steps {
		switch op := rng.IntN(100); {
		case op < 45:
			id, flow, class, k := len(m.Calls()), rng.IntN(len(flows)), classes[rng.IntN(3)], 1+rng.IntN(4)
			if rng.IntN(25) == 0 {
				k = 11
			}
			cl, _ := b.Class(class)
			c := flows[flow].Call(cl, k)
			log = append(log, fmt.Sprintf("%d: call %d flow %d class %s weight %d", step, id, flow, class, k))
			m.Acquire(id, flow, class, k)
			real[id] = realCall{call: c, a: c.AcquirePermissionAsync()}
		case op < 70:
			var held []*budgetmodel.Call
			for _, c := range m.Calls() {
				if c.State == "granted" {
					held = append(held, c)
				}
			}
			if len(held) == 0 {
				continue
			}
			c := held[rng.IntN(len(held))]
			log = append(log, fmt.Sprintf("%d: finish %d", step, c.ID))
			m.Release(c.ID)
			real[c.ID].call.FinishCall()
		case op < 80:
			var w []*budgetmodel.Call
			for _, c := range m.Calls() {
				if c.State == "pending" {
					w = append(w, c)
				}
			}
			if len(w) == 0 {
				continue
			}
			c := w[rng.IntN(len(w))]
			log = append(log, fmt.Sprintf("%d: cancel %d", step, c.ID))
			m.Cancel(c.ID)
			if !real[c.ID].a.Cancel() {
				fail("Cancel of %d returned false (real %v)", c.ID, real[c.ID].a.Err())
			}
		case op < 95:
			d := time.Duration(rng.IntN(1500)) * time.Millisecond
			log = append(log, fmt.Sprintf("%d: advance %v", step, d))
			m.Advance(m.Now() + d)
			clk.AdvanceTo(start.Add(m.Now()))
		default:
			cfg := modelConfig(rng, classes)
			log = append(log, fmt.Sprintf("%d: change %+v", step, cfg))
			m.Change(cfg)
			if err := b.ChangeConfig(cfg); err != nil {
				fail("ChangeConfig: %v", err)
			}
		}
		for _, c := range m.Calls() {
			if got := realState(real[c.ID].a, c.State == "released"); got != c.State {
				fail("after step %d, call %d (flow %d class %s weight %d): budget says %s, model %s", step, c.ID, c.Flow, c.Class, c.Weight, got, c.State)
			}
		}
		rm := b.Metrics()
		if rm.InUse != m.InUse() || rm.Queued != m.Queued() {
			fail("after step %d: budget %+v, model %d in use, %d queued", step, rm, m.InUse(), m.Queued())
		}
		for _, g := range rm.Groups {
			if g.Queued != m.GroupQueued(g.Name) {
				fail("after step %d: group %q queued %d, model %d (budget %+v)", step, g.Name, g.Queued, m.GroupQueued(g.Name), rm)
			}
		}
	}
	// Clean up from the budget's own outcomes: a cancel or a release may
	// grant other pending calls.
	for _, c := range m.Calls() {
		if c.State == "pending" && !real[c.ID].a.Cancel() && real[c.ID].a.Granted() {
			c.State = "granted"
		}
	}
	for _, c := range m.Calls() {
		if c.State == "granted" {
			real[c.ID].call.FinishCall()
		}
	}
	if rm := b.Metrics(); rm.InUse != 0 || rm.Queued != 0 {
		t.Fatalf("seed %d: left %+v", seed, rm)
	}
}
