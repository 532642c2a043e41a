package bulkhead_test

import (
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/internal/budgetmodel"
)

// TestBudgetAgreesWithANaiveModel drives a Budget and budgetmodel.Model, a
// naive implementation of the rules of docs/design.md ("Who goes next",
// "Weighted calls: bounded bypass", "Shedding", "Waiting") that keeps no
// heap and no list and recomputes everything by scanning, with the same
// random sequence of operations (calls of random flow, class and weight, Cancel,
// FinishCall, clock advances, ChangeConfig of the budget and of the
// partners' bulkheads), and compares every call's outcome and the metrics
// of both levels after every operation.
//
// Three of the eight flows are partners with a *Semaphore of their own
// (limits 1 to 4 for weights 1 to 3, so some calls are too heavy for their
// partner; FIFO or LIFO, bounded or unbounded queue, waits of every kind):
// the model's two-level admission. Where the library leaves the order open
// (calls that one partner release grants reach the budget on several
// goroutines; a partner's permits go back after the budget's critical
// section; two timers due at one instant) the model returns every possible
// outcome and the test keeps those that agree with what the Budget did
// (budgetmodel.Model.Settle, AdvanceAll). Each seed runs in a
// testing/synctest bubble so that "what the Budget did" is read when every
// goroutine the library started has finished (synctest.Wait), and the
// virtual clock is advanced one timer at a time, as the model does.
//
// -budget.modelseeds sets how many seeds (40 by default, a few seconds
// under -race; make stress-budget runs thousands).
func TestBudgetAgreesWithANaiveModel(t *testing.T) {
	var sum modelSums
	for seed := range uint64(*modelSeeds) {
		synctest.Test(t, func(t *testing.T) {
			sum.add(runModelSeed(t, seed, 300))
		})
		if t.Failed() {
			return
		}
	}
	st := sum.stats
	t.Logf("%d seeds: partner calls %d (queued at the partner %d; %d arrivals at the budget after a partner grant), too heavy for the partner %d, rejected by the partner %v; "+
		"partner passes: %d passed over, %d bypassing grants, %d held back; %d partner give-backs; at most %d outcomes possible at once, %d steps with more than one",
		*modelSeeds, sum.partnerCalls, st.PartnerQueued, st.Arrivals, sum.outcomes["rejected:partner-heavy"], sum.partnerRejected,
		st.PartnerPassedOver, st.PartnerBypassing, st.PartnerHeldBack, st.GiveBacks, sum.maxCands, sum.openSteps)
	// The default run must reach every rule of the partner level and the
	// orders the library leaves open (fewer seeds may not).
	if *modelSeeds >= 40 {
		for what, n := range map[string]int{
			"too heavy for the partner": sum.outcomes["rejected:partner-heavy"], "bypassing grants": st.PartnerBypassing,
			"held back by the bound": st.PartnerHeldBack, "arrivals from the partner's queue": st.Arrivals,
			"steps with several possible outcomes": sum.openSteps, "partner expiries": sum.partnerRejected[bulkhead.WaitTimeout.String()],
			"partner evictions": sum.partnerRejected[bulkhead.Evicted.String()], "budget rejections of partner calls": sum.budgetRejectedPartner,
		} {
			if n == 0 {
				t.Errorf("no %s in %d seeds", what, *modelSeeds)
			}
		}
	}
}

// modelSums adds up what the seeds of TestBudgetAgreesWithANaiveModel went
// through.
type modelSums struct {
	stats                 budgetmodel.Stats
	outcomes              map[string]int // final states of partner calls
	partnerRejected       map[string]int // by Reason
	partnerCalls          int
	budgetRejectedPartner int
	maxCands, openSteps   int
}

// seedSums is what one seed went through: its last model and the
// candidates' counts.
type seedSums struct {
	m                   *budgetmodel.Model
	partners            []bool
	maxCands, openSteps int
}

func (s *modelSums) add(r seedSums) {
	if r.m == nil {
		return
	}
	if s.outcomes == nil {
		s.outcomes, s.partnerRejected = map[string]int{}, map[string]int{}
	}
	st := r.m.Stats()
	s.stats.PartnerQueued += st.PartnerQueued
	s.stats.PartnerPassedOver += st.PartnerPassedOver
	s.stats.PartnerBypassing += st.PartnerBypassing
	s.stats.PartnerHeldBack += st.PartnerHeldBack
	s.stats.GiveBacks += st.GiveBacks
	s.stats.Arrivals += st.Arrivals
	for _, c := range r.m.Calls() {
		if !r.partners[c.Flow] {
			continue
		}
		s.partnerCalls++
		s.outcomes[c.State]++
		if reason, ok := strings.CutPrefix(c.State, "rejected:partner:"); ok {
			s.partnerRejected[reason]++
		} else if strings.HasPrefix(c.State, "rejected:") && c.State != "rejected:partner-heavy" {
			s.budgetRejectedPartner++
		}
	}
	s.maxCands = max(s.maxCands, r.maxCands)
	s.openSteps += r.openSteps
}

var modelSeeds = flag.Int("budget.modelseeds", 40, "TestBudgetAgreesWithANaiveModel: how many random sequences of 300 operations")

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
	}
	var te *bulkhead.TooHeavyError
	var fe *bulkhead.FullError
	switch {
	case errors.As(err, &te):
		return "rejected:partner-heavy"
	case errors.As(err, &fe):
		return "rejected:partner:" + fe.Reason.String()
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

// modelPartnerConfig returns a random valid configuration of a partner's
// Semaphore: limit 2 to 5 (calls of weight 3 are too heavy for some),
// waits of every kind, FIFO or LIFO, a bounded queue or not.
func modelPartnerConfig(rng *rand.Rand) bulkhead.Config {
	cfg := bulkhead.Config{MaxConcurrentCalls: 2 + rng.IntN(4), MaxQueuedCalls: bulkhead.Unbounded}
	cfg.MaxWaitDuration = partnerWait(rng)
	if rng.IntN(3) == 0 {
		cfg.MaxQueuedCalls = 1 + rng.IntN(3)
	}
	if rng.IntN(2) == 0 {
		cfg.QueueOrder = bulkhead.LIFO
	}
	return cfg
}

func partnerWait(rng *rand.Rand) time.Duration {
	switch rng.IntN(8) {
	case 0:
		return 0
	case 1:
		return bulkhead.NoTimeout
	}
	return time.Duration(500+rng.IntN(3000)) * time.Millisecond
}

// runModelSeed runs one random sequence of steps operations and returns
// what it went through (before the clean-up).
func runModelSeed(t *testing.T, seed uint64, steps int) seedSums {
	rng := rand.New(rand.NewPCG(seed, 99))
	classes := []string{"a", "b", "c"}
	cfg := modelConfig(rng, classes)
	clk := newClock()
	start := clk.Now()
	b, err := bulkhead.NewBudget("hub", cfg, bulkhead.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	// Flows 0-4 have no partner bulkhead, 5-7 have one.
	groups := []string{"", "", "gold", "gold", "silver", "", "gold", "silver"}
	partCfgs := make([]*bulkhead.Config, len(groups))
	sems := make([]*bulkhead.Semaphore, len(groups))
	var flows []*bulkhead.BudgetPartner
	for i, g := range groups {
		var f *bulkhead.BudgetPartner
		if i < 5 {
			f, err = b.Flow(fmt.Sprint("f", i), bulkhead.PartnerOptions{Group: g})
		} else {
			pc := modelPartnerConfig(rng)
			partCfgs[i] = &pc
			if sems[i], err = bulkhead.New(fmt.Sprint("p", i), pc, bulkhead.WithClock(clk)); err != nil {
				t.Fatal(err)
			}
			f, err = b.Partner(sems[i], bulkhead.PartnerOptions{Group: g})
		}
		if err != nil {
			t.Fatal(err)
		}
		flows = append(flows, f)
	}
	cands := []*budgetmodel.Model{budgetmodel.NewWithPartners(cfg, groups, partCfgs)}
	maxCands, openSteps := 1, 0
	real := map[int]realCall{}
	released := map[int]bool{}
	var log []string
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("seed %d: "+format+"\nsteps:\n%s", append(append([]any{seed}, args...), strings.Join(log, "\n"))...)
	}
	// each applies op to a copy of every candidate and settles them.
	each := func(op func(m *budgetmodel.Model)) {
		var next []*budgetmodel.Model
		seen := map[string]bool{}
		for _, m := range cands {
			if len(cands) > 1 {
				m = m.Clone()
			} // else m is ours alone: no copy needed
			op(m)
			if len(cands) == 1 && !m.Pending() {
				next = append(next, m) // the one outcome: no key needed
				break
			}
			for _, x := range m.Settle() {
				if k := x.Key(); !seen[k] {
					seen[k] = true
					next = append(next, x)
				}
			}
		}
		cands = next
	}
	// observe reads what the Budget and its partners say; mismatch says
	// how m disagrees with it ("" if it does not).
	type observed struct {
		states []string // by call id
		budget bulkhead.BudgetMetrics
		parts  []bulkhead.Metrics // by flow
	}
	observe := func() observed {
		o := observed{states: make([]string, len(real)), budget: b.Metrics(), parts: make([]bulkhead.Metrics, len(sems))}
		for id, r := range real {
			o.states[id] = realState(r.a, released[id])
		}
		for i, s := range sems {
			if s != nil {
				o.parts[i] = s.Metrics()
			}
		}
		return o
	}
	mismatch := func(o observed, m *budgetmodel.Model) string {
		for _, c := range m.Calls() {
			if got := o.states[c.ID]; got != c.State {
				return fmt.Sprintf("call %d (flow %d class %s weight %d): budget says %s, model %s (budget %+v, partners %v)", c.ID, c.Flow, c.Class, c.Weight, got, c.State, o.budget, o.parts)
			}
		}
		rm := o.budget
		if rm.InUse != m.InUse() || rm.Queued != m.Queued() {
			return fmt.Sprintf("budget %+v, model %d in use, %d queued", rm, m.InUse(), m.Queued())
		}
		for _, g := range rm.Groups {
			if g.Queued != m.GroupQueued(g.Name) {
				return fmt.Sprintf("group %q queued %d, model %d (budget %+v)", g.Name, g.Queued, m.GroupQueued(g.Name), rm)
			}
		}
		for i, s := range sems {
			if s == nil {
				continue
			}
			pm := o.parts[i]
			if pm.InFlightCalls != m.PartnerInUse(i) || pm.QueuedCalls != m.PartnerQueued(i) {
				return fmt.Sprintf("partner of flow %d: %d in flight, %d queued; model %d, %d", i, pm.InFlightCalls, pm.QueuedCalls, m.PartnerInUse(i), m.PartnerQueued(i))
			}
		}
		return ""
	}
	// check waits for every goroutine the library started, then keeps the
	// candidates that agree with what it did.
	check := func(step int) {
		t.Helper()
		synctest.Wait()
		maxCands = max(maxCands, len(cands))
		if len(cands) > 1 {
			openSteps++
		}
		o := observe()
		var why []string
		kept := cands[:0:0]
		for _, m := range cands {
			if w := mismatch(o, m); w != "" {
				why = append(why, w+"\n  model: "+m.Describe())
			} else {
				kept = append(kept, m)
			}
		}
		if len(kept) == 0 {
			fail("after step %d, no outcome of the model agrees:\n%s", step, strings.Join(why, "\n"))
		}
		cands = kept
	}
	for step := range steps {
		m0 := cands[0] // every candidate agrees on every call's state
		switch op := rng.IntN(100); {
		case op < 45:
			id, flow, class, k := len(m0.Calls()), rng.IntN(5), classes[rng.IntN(3)], 1+rng.IntN(4)
			if rng.IntN(2) == 0 {
				// Half the calls go through a partner, most through
				// flow 5's, to make its queue long enough for the
				// bypass bound.
				flow = 5 + max(0, rng.IntN(6)-3)
			}
			if sems[flow] != nil {
				k = 1 + rng.IntN(3)
			} else if rng.IntN(25) == 0 {
				k = 11
			}
			cl, _ := b.Class(class)
			c := flows[flow].Call(cl, k)
			log = append(log, fmt.Sprintf("%d: call %d flow %d class %s weight %d", step, id, flow, class, k))
			each(func(m *budgetmodel.Model) { m.Acquire(id, flow, class, k) })
			real[id] = realCall{call: c, a: c.AcquirePermissionAsync()}
		case op < 68:
			var held []*budgetmodel.Call
			for _, c := range m0.Calls() {
				if c.State == "granted" {
					held = append(held, c)
				}
			}
			if len(held) == 0 {
				continue
			}
			c := held[rng.IntN(len(held))]
			log = append(log, fmt.Sprintf("%d: finish %d", step, c.ID))
			each(func(m *budgetmodel.Model) { m.Release(c.ID) })
			released[c.ID] = true
			real[c.ID].call.FinishCall()
		case op < 78:
			var w []*budgetmodel.Call
			for _, c := range m0.Calls() {
				if c.State == "pending" {
					w = append(w, c)
				}
			}
			if len(w) == 0 {
				continue
			}
			c := w[rng.IntN(len(w))]
			log = append(log, fmt.Sprintf("%d: cancel %d", step, c.ID))
			each(func(m *budgetmodel.Model) { m.Cancel(c.ID) })
			if !real[c.ID].a.Cancel() {
				fail("Cancel of %d returned false (real %v)", c.ID, real[c.ID].a.Err())
			}
		case op < 93:
			d := time.Duration(rng.IntN(1500)) * time.Millisecond
			target := m0.Now() + d
			log = append(log, fmt.Sprintf("%d: advance %v to %v", step, d, target))
			// One timer at a time, as the model fires them, each with
			// what it started settled.
			for {
				next, ok := clk.NextDeadline()
				at := next.Sub(start)
				if !ok || at > target {
					break
				}
				clk.AdvanceTo(next)
				var all []*budgetmodel.Model
				for _, m := range cands {
					all = append(all, m.AdvanceAll(at)...)
				}
				cands = all
				check(step)
			}
			var all []*budgetmodel.Model
			for _, m := range cands {
				all = append(all, m.AdvanceAll(target)...)
			}
			cands = all
			clk.AdvanceTo(start.Add(target))
		case op < 96:
			var parts []int
			for i, s := range sems {
				if s != nil {
					parts = append(parts, i)
				}
			}
			i := parts[rng.IntN(len(parts))]
			pc := *partCfgs[i]
			pc.MaxConcurrentCalls, pc.MaxWaitDuration = 2+rng.IntN(4), partnerWait(rng)
			log = append(log, fmt.Sprintf("%d: change partner of flow %d to limit %d wait %v", step, i, pc.MaxConcurrentCalls, pc.MaxWaitDuration))
			each(func(m *budgetmodel.Model) { m.ChangePartner(i, pc) })
			if err := sems[i].ChangeConfig(pc); err != nil {
				fail("partner ChangeConfig: %v", err)
			}
		default:
			cfg := modelConfig(rng, classes)
			log = append(log, fmt.Sprintf("%d: change %+v", step, cfg))
			each(func(m *budgetmodel.Model) { m.Change(cfg) })
			if err := b.ChangeConfig(cfg); err != nil {
				fail("ChangeConfig: %v", err)
			}
		}
		check(step)
	}
	sums := seedSums{m: cands[0], maxCands: maxCands, openSteps: openSteps}
	for _, s := range sems {
		sums.partners = append(sums.partners, s != nil)
	}
	// Clean up from the Budget's own outcomes: a cancel or a release may
	// grant other pending calls.
	ids := slices.Sorted(func(yield func(int) bool) {
		for id := range real {
			if !yield(id) {
				return
			}
		}
	})
	for pending := true; pending; {
		pending = false
		for _, id := range ids {
			if real[id].a.Err() == bulkhead.ErrPending {
				pending = true
				real[id].a.Cancel()
				synctest.Wait()
			}
		}
	}
	for _, id := range ids {
		if real[id].a.Err() == nil && !released[id] {
			released[id] = true
			real[id].call.FinishCall()
			synctest.Wait()
		}
	}
	if rm := b.Metrics(); rm.InUse != 0 || rm.Queued != 0 {
		t.Fatalf("seed %d: left %+v", seed, rm)
	}
	for i, s := range sems {
		if s != nil {
			if pm := s.Metrics(); pm.InFlightCalls != 0 || pm.QueuedCalls != 0 {
				t.Fatalf("seed %d: partner of flow %d left %+v", seed, i, pm)
			}
		}
	}
	return sums
}
