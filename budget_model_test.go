package bulkhead_test

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/rxbulkhead/bulkhead"
)

// TestBudgetAgreesWithANaiveModel drives a Budget and budgetModel, a naive
// implementation of the rules of docs/design.md ("Who goes next", "Weighted
// calls: bounded bypass", "Shedding", "Waiting") that keeps no heap and no
// list and recomputes everything by scanning, with the same random
// sequence of operations (calls of random flow, class and weight, Cancel,
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

type mCall struct {
	id      int
	flow    int
	class   string
	k       int
	seq     int
	enq     time.Duration
	state   string // pending, granted, rejected:REASON, cancelled, released
	byp     int
	real    *bulkhead.Acquisition
	realCal bulkhead.BudgetCall
}

type budgetModel struct {
	cfg   bulkhead.BudgetConfig
	flows []string // flow -> group
	calls []*mCall
	seq   int
	now   time.Duration
}

func (m *budgetModel) classIdx(name string) int {
	for i, c := range m.cfg.Classes {
		if c.Name == name {
			return i
		}
	}
	panic(name)
}

func (m *budgetModel) group(name string) (nominal, lendable, limit int) {
	for _, g := range m.cfg.Groups {
		if g.Name == name {
			return g.Nominal, g.Lendable, satAddInt(g.Nominal, g.BorrowingLimit)
		}
	}
	return 0, 0, bulkhead.Unbounded
}

func satAddInt(a, b int) int {
	if a > math.MaxInt-b {
		return math.MaxInt
	}
	return a + b
}

// held sums the weights of granted calls matching f.
func (m *budgetModel) held(f func(*mCall) bool) int {
	n := 0
	for _, c := range m.calls {
		if c.state == "granted" && f(c) {
			n += c.k
		}
	}
	return n
}

func (m *budgetModel) waiting() []*mCall {
	var w []*mCall
	for _, c := range m.calls {
		if c.state == "pending" {
			w = append(w, c)
		}
	}
	return w
}

func (m *budgetModel) reserve(g string, extra int) int {
	nom, lend, _ := m.group(g)
	return max(0, nom-lend-(m.held(func(c *mCall) bool { return m.flows[c.flow] == g })+extra))
}

func (m *budgetModel) groups() []string {
	gs := []string{""}
	for _, g := range m.cfg.Groups {
		gs = append(gs, g.Name)
	}
	for _, g := range m.flows {
		if !slices.Contains(gs, g) {
			gs = append(gs, g)
		}
	}
	return gs
}

// sharedAvail for class c and group g after a grant of k to (gc, gg).
func (m *budgetModel) sharedAvail(c, g, gc, gg string, k int) int {
	others := 0
	for _, x := range m.groups() {
		if x == g {
			continue
		}
		extra := 0
		if x == gg {
			extra = k
		}
		others += m.reserve(x, extra)
	}
	ci := m.classIdx(c)
	hr := 0
	for i := range ci {
		hr += m.cfg.Classes[i].Headroom
	}
	ch := m.held(func(x *mCall) bool { return x.class == c })
	if gc == c {
		ch += k
	}
	excl := max(0, hr-max(0, m.cfg.Classes[ci].Share-ch))
	total := m.held(func(*mCall) bool { return true }) + k
	return m.cfg.Size - total - others - excl
}

func (m *budgetModel) limitAvail(g string) int {
	_, _, lim := m.group(g)
	if lim == bulkhead.Unbounded {
		return bulkhead.Unbounded
	}
	return lim - m.held(func(c *mCall) bool { return m.flows[c.flow] == g })
}

func (m *budgetModel) attainable(c, g string) int {
	others := 0
	for _, x := range m.cfg.Groups {
		if x.Name != g {
			others += x.Nominal - x.Lendable
		}
	}
	ci := m.classIdx(c)
	hr := 0
	for i := range ci {
		hr += m.cfg.Classes[i].Headroom
	}
	_, _, lim := m.group(g)
	return min(m.cfg.Size-others-max(0, hr-m.cfg.Classes[ci].Share), lim)
}

// pass follows passLocked's rules by scanning.
func (m *budgetModel) pass() {
	if len(m.waiting()) == 0 {
		return
	}
	type key struct {
		class string
		group string
	}
	skipCG := map[key]bool{}
	skipLane := map[[2]any]bool{} // {flow, class}
	skipClass := map[string]bool{}
	var blocked []*mCall
	skips := 0
	laneHeld := func(flow int, class string) int {
		return m.held(func(c *mCall) bool { return c.flow == flow && c.class == class })
	}
	laneHead := func(flow int, class string) *mCall {
		var h *mCall
		for _, c := range m.waiting() {
			if c.flow == flow && c.class == class && (h == nil || c.seq < h.seq) {
				h = c
			}
		}
		return h
	}
	for skips < 64 {
		// 1. the class
		var cls string
		for tier := 0; tier < 2 && cls == ""; tier++ {
			for _, c := range m.cfg.Classes {
				if skipClass[c.Name] {
					continue
				}
				hasW := false
				for _, w := range m.waiting() {
					if w.class == c.Name {
						hasW = true
						break
					}
				}
				if !hasW {
					continue
				}
				if tier == 0 && m.held(func(x *mCall) bool { return x.class == c.Name }) >= c.Share {
					continue
				}
				cls = c.Name
				break
			}
		}
		if cls == "" {
			break
		}
		// 2. the lane: groups below nominal first, then the least (held, head seq)
		var best *mCall
		bestUnder := false
		for _, w := range m.waiting() {
			if w.class != cls {
				continue
			}
			g := m.flows[w.flow]
			if skipCG[key{cls, g}] || skipLane[[2]any{w.flow, cls}] {
				continue
			}
			if laneHead(w.flow, cls) != w {
				continue
			}
			nom, _, _ := m.group(g)
			under := m.held(func(c *mCall) bool { return m.flows[c.flow] == g }) < nom
			better := false
			switch {
			case best == nil, under && !bestUnder:
				better = true
			case under == bestUnder:
				lh, bh := laneHeld(w.flow, cls), laneHeld(best.flow, cls)
				better = lh < bh || lh == bh && w.seq < best.seq
			}
			if better {
				best, bestUnder = w, under
			}
		}
		if best == nil {
			skipClass[cls] = true
			continue
		}
		w, g := best, m.flows[best.flow]
		if la := m.limitAvail(g); w.k > la {
			if la <= 0 {
				skipCG[key{cls, g}] = true
			} else {
				skipLane[[2]any{w.flow, cls}] = true
				skips++
			}
			continue
		}
		sa := m.sharedAvail(cls, g, cls, g, 0)
		if w.k > sa {
			blocked = append(blocked, w)
			if sa <= 0 {
				skipCG[key{cls, g}] = true
			} else {
				skipLane[[2]any{w.flow, cls}] = true
				skips++
			}
			continue
		}
		charges := make([]int, len(blocked))
		over := false
		for i, h := range blocked {
			hg := m.flows[h.flow]
			charges[i] = m.sharedAvail(h.class, hg, h.class, hg, 0) - m.sharedAvail(h.class, hg, cls, g, w.k)
			over = over || charges[i] > 0 && h.byp+charges[i] > m.cfg.MaxBypass
		}
		if over {
			reserved := 0
			for _, x := range m.groups() {
				reserved += m.reserve(x, 0)
			}
			if reserved == 0 {
				break
			}
			skipLane[[2]any{w.flow, cls}] = true
			skips++
			continue
		}
		for i, h := range blocked {
			h.byp += charges[i]
		}
		w.state = "granted"
	}
}

func (m *budgetModel) acquire(c *mCall) {
	g := m.flows[c.flow]
	ci := m.classIdx(c.class)
	cc := m.cfg.Classes[ci]
	fits := c.k <= m.limitAvail(g) && c.k <= m.sharedAvail(c.class, g, c.class, g, 0)
	m.calls = append(m.calls, c)
	if fits && len(m.waiting()) == 0 {
		c.state = "granted"
		return
	}
	if c.k > m.attainable(c.class, g) {
		c.state = "rejected:heavy"
		return
	}
	noWait := cc.MaxWaitDuration == 0
	if noWait && !fits {
		c.state = "rejected:" + bulkhead.NoWait.String()
		return
	}
	if !noWait {
		inClass := 0
		for _, w := range m.waiting() {
			if w.class == c.class {
				inClass++
			}
		}
		if inClass >= cc.MaxQueuedCalls {
			c.state = "rejected:" + bulkhead.QueueFull.String()
			return
		}
		if len(m.waiting()) >= m.cfg.MaxQueuedCalls {
			evicted := false
			for i := len(m.cfg.Classes) - 1; i > ci && !evicted; i-- {
				var newest *mCall
				for _, w := range m.waiting() {
					if w.class == m.cfg.Classes[i].Name && (newest == nil || w.seq > newest.seq) {
						newest = w
					}
				}
				if newest != nil {
					newest.state = "rejected:" + bulkhead.Evicted.String()
					evicted = true
				}
			}
			if !evicted {
				c.state = "rejected:" + bulkhead.QueueFull.String()
				return
			}
		}
	}
	m.seq++
	c.seq, c.enq, c.state = m.seq, m.now, "pending"
	m.pass()
	if noWait && c.state == "pending" {
		c.state = "rejected:" + bulkhead.NoWait.String()
	}
}

func (m *budgetModel) deadline(c *mCall) time.Duration {
	w := m.cfg.Classes[m.classIdx(c.class)].MaxWaitDuration
	if w == bulkhead.NoTimeout {
		return math.MaxInt64
	}
	return c.enq + w
}

// advance moves time to target, expiring and passing at each deadline in
// order, as the budget's one timer does.
func (m *budgetModel) advance(target time.Duration) {
	for {
		next := time.Duration(math.MaxInt64)
		for _, w := range m.waiting() {
			next = min(next, m.deadline(w))
		}
		if next > target {
			break
		}
		m.now = max(m.now, next)
		for _, c := range m.cfg.Classes {
			for _, w := range m.waiting() {
				if w.class == c.Name && m.deadline(w) <= m.now {
					w.state = "rejected:" + bulkhead.WaitTimeout.String()
				}
			}
		}
		m.pass()
	}
	m.now = target
}

func (m *budgetModel) change(cfg bulkhead.BudgetConfig) {
	m.cfg = cfg
	for _, c := range m.cfg.Classes {
		for _, w := range m.waiting() {
			if w.class == c.Name && w.k > m.attainable(w.class, m.flows[w.flow]) {
				w.state = "rejected:heavy"
			}
		}
	}
	m.pass()
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
	m := &budgetModel{cfg: cfg, flows: []string{"", "", "gold", "gold", "silver"}}
	var flows []*bulkhead.BudgetPartner
	for i, g := range m.flows {
		f, err := b.Flow(fmt.Sprint("f", i), bulkhead.PartnerOptions{Group: g})
		if err != nil {
			t.Fatal(err)
		}
		flows = append(flows, f)
	}
	var log []string
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("seed %d: "+format+"\nsteps:\n%s", append(append([]any{seed}, args...), fmt.Sprint(log))...)
	}
	for step := range steps {
		switch op := rng.IntN(100); {
		case op < 45:
			c := &mCall{id: len(m.calls), flow: rng.IntN(len(flows)), class: classes[rng.IntN(3)], k: 1 + rng.IntN(4)}
			if rng.IntN(25) == 0 {
				c.k = 11
			}
			cl, _ := b.Class(c.class)
			c.realCal = flows[c.flow].Call(cl, c.k)
			log = append(log, fmt.Sprintf("%d: call %d flow %d class %s weight %d", step, c.id, c.flow, c.class, c.k))
			m.acquire(c)
			c.real = c.realCal.AcquirePermissionAsync()
		case op < 70:
			var held []*mCall
			for _, c := range m.calls {
				if c.state == "granted" {
					held = append(held, c)
				}
			}
			if len(held) == 0 {
				continue
			}
			c := held[rng.IntN(len(held))]
			log = append(log, fmt.Sprintf("%d: finish %d", step, c.id))
			c.state = "released"
			m.pass()
			c.realCal.FinishCall()
		case op < 80:
			w := m.waiting()
			if len(w) == 0 {
				continue
			}
			c := w[rng.IntN(len(w))]
			log = append(log, fmt.Sprintf("%d: cancel %d", step, c.id))
			c.state = "cancelled"
			m.pass()
			if !c.real.Cancel() {
				fail("Cancel of %d returned false (real %v)", c.id, c.real.Err())
			}
		case op < 95:
			d := time.Duration(rng.IntN(1500)) * time.Millisecond
			log = append(log, fmt.Sprintf("%d: advance %v", step, d))
			m.advance(m.now + d)
			clk.AdvanceTo(start.Add(m.now))
		default:
			cfg := modelConfig(rng, classes)
			log = append(log, fmt.Sprintf("%d: change %+v", step, cfg))
			m.change(cfg)
			if err := b.ChangeConfig(cfg); err != nil {
				fail("ChangeConfig: %v", err)
			}
		}
		for _, c := range m.calls {
			if got := realState(c.real, c.state == "released"); got != c.state {
				fail("after step %d, call %d (flow %d class %s weight %d): budget says %s, model %s", step, c.id, c.flow, c.class, c.k, got, c.state)
			}
		}
		rm := b.Metrics()
		if held := m.held(func(*mCall) bool { return true }); rm.InUse != held || rm.Queued != len(m.waiting()) {
			fail("after step %d: budget %+v, model %d in use, %d queued", step, rm, held, len(m.waiting()))
		}
	}
	// Clean up from the budget's own outcomes: a cancel or a release may
	// grant other pending calls.
	for _, c := range m.calls {
		if c.state == "pending" && !c.real.Cancel() && c.real.Granted() {
			c.state = "granted"
		}
	}
	for _, c := range m.calls {
		if c.state == "granted" {
			c.realCal.FinishCall()
		}
	}
	if rm := b.Metrics(); rm.InUse != 0 || rm.Queued != 0 {
		t.Fatalf("seed %d: left %+v", seed, rm)
	}
}
