// Package budgetmodel is a naive sequential specification of
// bulkhead.Budget, for tests: the rules of docs/design.md ("Who goes next",
// "Weighted calls: bounded bypass", "Shedding", "Waiting") written with no
// heap and no list, every choice recomputed by scanning every call. The
// core's TestBudgetAgreesWithANaiveModel compares a Budget with it step by
// step; internal/linearizability checks concurrent histories of a Budget
// against it with porcupine. Flows only: calls without a partner bulkhead.
//
// It is slow on purpose (quadratic in the calls): keep histories short.
package budgetmodel

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/rxbulkhead/bulkhead"
)

// New returns a model of a budget created with cfg (valid) whose flows
// f0, f1, ... joined the groups flowGroups[0], flowGroups[1], ... ("": none).
func New(cfg bulkhead.BudgetConfig, flowGroups []string) *Model {
	return &Model{cfg: cfg, flows: slices.Clone(flowGroups)}
}

// Clone returns a deep copy of m.
func (m *Model) Clone() *Model {
	c := *m
	c.flows = slices.Clone(m.flows)
	c.calls = make([]*Call, len(m.calls))
	for i, x := range m.calls {
		y := *x
		c.calls[i] = &y
	}
	return &c
}

// Acquire asks for weight permits of class for a call of flow, as
// AcquirePermissionAsync does, and returns the call with its state after
// the arrival (and the pass it triggered).
func (m *Model) Acquire(id, flow int, class string, weight int) *Call {
	c := &Call{ID: id, Flow: flow, Class: class, Weight: weight}
	m.acquire(c)
	return c
}

// Get returns the call id, nil if there is none.
func (m *Model) Get(id int) *Call {
	for _, c := range m.calls {
		if c.ID == id {
			return c
		}
	}
	return nil
}

// Release gives back the permits of granted call id (FinishCall or
// ReleasePermission) and reports whether it was granted.
func (m *Model) Release(id int) bool {
	c := m.Get(id)
	if c == nil || c.State != "granted" {
		return false
	}
	c.State = "released"
	m.pass()
	return true
}

// Cancel withdraws pending call id and reports whether it was pending.
func (m *Model) Cancel(id int) bool {
	c := m.Get(id)
	if c == nil || c.State != "pending" {
		return false
	}
	c.State = "cancelled"
	m.pass()
	return true
}

// Advance moves the model's time to target (an offset from the budget's
// start), expiring the waits at each deadline in order and passing after
// each, as the budget's one timer does.
func (m *Model) Advance(target time.Duration) { m.advance(target) }

// Now is the model's time.
func (m *Model) Now() time.Duration { return m.now }

// Change applies a valid configuration, as ChangeConfig does.
func (m *Model) Change(cfg bulkhead.BudgetConfig) { m.change(cfg) }

// Calls returns every call asked so far, in order.
func (m *Model) Calls() []*Call { return m.calls }

// InUse is the permits held.
func (m *Model) InUse() int { return m.held(func(*Call) bool { return true }) }

// Queued is the calls waiting.
func (m *Model) Queued() int { return len(m.waiting()) }

// GroupQueued is the calls of the flows of group g waiting
// (GroupMetrics.Queued).
func (m *Model) GroupQueued(g string) int {
	n := 0
	for _, c := range m.waiting() {
		if m.flows[c.Flow] == g {
			n++
		}
	}
	return n
}

// Key describes the whole state, for porcupine's Equal and Hash: two models
// with the same key behave alike.
func (m *Model) Key() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d %d %d|", m.cfg.Size, m.seq, m.now)
	for _, c := range m.calls {
		fmt.Fprintf(&b, "%d:%s:%d:%d;", c.ID, c.State, c.seq, c.byp)
	}
	return b.String()
}

// Call is one call the model knows.
type Call struct {
	ID     int
	Flow   int    // index in Model.Flows
	Class  string // its class's name
	Weight int
	// State is pending, granted, released, cancelled, or
	// rejected:REASON (the Reason's String, or heavy for a *WeightError).
	State string
	// Fast says the call was granted at once on arrival, nobody waiting
	// (the budget returns the shared granted Acquisition then).
	Fast bool

	seq int
	enq time.Duration
	byp int
}

type Model struct {
	cfg   bulkhead.BudgetConfig
	flows []string // flow -> group
	calls []*Call
	seq   int
	now   time.Duration
}

func (m *Model) classIdx(name string) int {
	for i, c := range m.cfg.Classes {
		if c.Name == name {
			return i
		}
	}
	panic(name)
}

func (m *Model) group(name string) (nominal, lendable, limit int) {
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
func (m *Model) held(f func(*Call) bool) int {
	n := 0
	for _, c := range m.calls {
		if c.State == "granted" && f(c) {
			n += c.Weight
		}
	}
	return n
}

func (m *Model) waiting() []*Call {
	var w []*Call
	for _, c := range m.calls {
		if c.State == "pending" {
			w = append(w, c)
		}
	}
	return w
}

func (m *Model) reserve(g string, extra int) int {
	nom, lend, _ := m.group(g)
	return max(0, nom-lend-(m.held(func(c *Call) bool { return m.flows[c.Flow] == g })+extra))
}

func (m *Model) groups() []string {
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
func (m *Model) sharedAvail(c, g, gc, gg string, k int) int {
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
	ch := m.held(func(x *Call) bool { return x.Class == c })
	if gc == c {
		ch += k
	}
	excl := max(0, hr-max(0, m.cfg.Classes[ci].Share-ch))
	total := m.held(func(*Call) bool { return true }) + k
	return m.cfg.Size - total - others - excl
}

func (m *Model) limitAvail(g string) int {
	_, _, lim := m.group(g)
	if lim == bulkhead.Unbounded {
		return bulkhead.Unbounded
	}
	return lim - m.held(func(c *Call) bool { return m.flows[c.Flow] == g })
}

func (m *Model) attainable(c, g string) int {
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
func (m *Model) pass() {
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
	var blocked []*Call
	skips := 0
	laneHeld := func(flow int, class string) int {
		return m.held(func(c *Call) bool { return c.Flow == flow && c.Class == class })
	}
	laneHead := func(flow int, class string) *Call {
		var h *Call
		for _, c := range m.waiting() {
			if c.Flow == flow && c.Class == class && (h == nil || c.seq < h.seq) {
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
					if w.Class == c.Name {
						hasW = true
						break
					}
				}
				if !hasW {
					continue
				}
				if tier == 0 && m.held(func(x *Call) bool { return x.Class == c.Name }) >= c.Share {
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
		var best *Call
		bestUnder := false
		for _, w := range m.waiting() {
			if w.Class != cls {
				continue
			}
			g := m.flows[w.Flow]
			if skipCG[key{cls, g}] || skipLane[[2]any{w.Flow, cls}] {
				continue
			}
			if laneHead(w.Flow, cls) != w {
				continue
			}
			nom, _, _ := m.group(g)
			under := m.held(func(c *Call) bool { return m.flows[c.Flow] == g }) < nom
			better := false
			switch {
			case best == nil, under && !bestUnder:
				better = true
			case under == bestUnder:
				lh, bh := laneHeld(w.Flow, cls), laneHeld(best.Flow, cls)
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
		w, g := best, m.flows[best.Flow]
		if la := m.limitAvail(g); w.Weight > la {
			if la <= 0 {
				skipCG[key{cls, g}] = true
			} else {
				skipLane[[2]any{w.Flow, cls}] = true
				skips++
			}
			continue
		}
		sa := m.sharedAvail(cls, g, cls, g, 0)
		if w.Weight > sa {
			blocked = append(blocked, w)
			if sa <= 0 {
				skipCG[key{cls, g}] = true
			} else {
				skipLane[[2]any{w.Flow, cls}] = true
				skips++
			}
			continue
		}
		charges := make([]int, len(blocked))
		over := false
		for i, h := range blocked {
			hg := m.flows[h.Flow]
			charges[i] = m.sharedAvail(h.Class, hg, h.Class, hg, 0) - m.sharedAvail(h.Class, hg, cls, g, w.Weight)
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
			skipLane[[2]any{w.Flow, cls}] = true
			skips++
			continue
		}
		for i, h := range blocked {
			h.byp += charges[i]
		}
		w.State = "granted"
	}
}

func (m *Model) acquire(c *Call) {
	g := m.flows[c.Flow]
	ci := m.classIdx(c.Class)
	cc := m.cfg.Classes[ci]
	fits := c.Weight <= m.limitAvail(g) && c.Weight <= m.sharedAvail(c.Class, g, c.Class, g, 0)
	m.calls = append(m.calls, c)
	if fits && len(m.waiting()) == 0 {
		c.State, c.Fast = "granted", true
		return
	}
	if c.Weight > m.attainable(c.Class, g) {
		c.State = "rejected:heavy"
		return
	}
	noWait := cc.MaxWaitDuration == 0
	if noWait && !fits {
		c.State = "rejected:" + bulkhead.NoWait.String()
		return
	}
	if !noWait {
		inClass := 0
		for _, w := range m.waiting() {
			if w.Class == c.Class {
				inClass++
			}
		}
		if inClass >= cc.MaxQueuedCalls {
			c.State = "rejected:" + bulkhead.QueueFull.String()
			return
		}
		if len(m.waiting()) >= m.cfg.MaxQueuedCalls {
			evicted := false
			for i := len(m.cfg.Classes) - 1; i > ci && !evicted; i-- {
				var newest *Call
				for _, w := range m.waiting() {
					if w.Class == m.cfg.Classes[i].Name && (newest == nil || w.seq > newest.seq) {
						newest = w
					}
				}
				if newest != nil {
					newest.State = "rejected:" + bulkhead.Evicted.String()
					evicted = true
				}
			}
			if !evicted {
				c.State = "rejected:" + bulkhead.QueueFull.String()
				return
			}
		}
	}
	m.seq++
	c.seq, c.enq, c.State = m.seq, m.now, "pending"
	m.pass()
	if noWait && c.State == "pending" {
		c.State = "rejected:" + bulkhead.NoWait.String()
	}
}

func (m *Model) deadline(c *Call) time.Duration {
	w := m.cfg.Classes[m.classIdx(c.Class)].MaxWaitDuration
	if w == bulkhead.NoTimeout {
		return math.MaxInt64
	}
	return c.enq + w
}

// advance moves time to target, expiring and passing at each deadline in
// order, as the budget's one timer does.
func (m *Model) advance(target time.Duration) {
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
				if w.Class == c.Name && m.deadline(w) <= m.now {
					w.State = "rejected:" + bulkhead.WaitTimeout.String()
				}
			}
		}
		m.pass()
	}
	m.now = target
}

func (m *Model) change(cfg bulkhead.BudgetConfig) {
	m.cfg = cfg
	for _, c := range m.cfg.Classes {
		for _, w := range m.waiting() {
			if w.Class == c.Name && w.Weight > m.attainable(w.Class, m.flows[w.Flow]) {
				w.State = "rejected:heavy"
			}
		}
	}
	m.pass()
}
