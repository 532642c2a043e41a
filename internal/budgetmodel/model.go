// Package budgetmodel is a naive sequential specification of
// bulkhead.Budget, for tests: the rules of docs/design.md ("Who goes next",
// "Weighted calls: bounded bypass", "Shedding", "Waiting") written with no
// heap and no list, every choice recomputed by scanning every call. The
// core's TestBudgetAgreesWithANaiveModel compares a Budget with it step by
// step; internal/linearizability checks concurrent histories of a Budget's
// flows against it with porcupine.
//
// Partners (NewWithPartners): a flow may have a partner bulkhead, a
// *Semaphore, modelled with the rules of docs/design.md "Weighted calls on
// a Semaphore" (at once or not at all, grant order FIFO or LIFO, bounded
// bypass with its marks, too heavy, queue bound and LIFO eviction, expiry)
// and composed with the budget as docs/design.md "Partner first, then the
// budget" and "The weight at the partner" say: a call of weight k waits for
// k partner permits first; once granted there it arrives at the budget
// (admitted, queued or rejected as a newcomer); a budget rejection, a
// cancel at the budget or a release gives the k partner permits back,
// which may grant the partner's next waiters, who arrive at the budget in
// turn.
//
// What the library leaves undefined, the model leaves open: an arrival at
// the budget, a give-back of partner permits, and a partner's rejection
// of a call queued there reaching the call's Acquisition are internal
// steps (pending until Settle), because a partner release that grants
// several waiters delivers them on several goroutines, the give-back of a
// call the budget rejected or withdrew runs after the budget's critical
// section, and a partner delivers its decisions after its own. Settle runs
// the pending steps in every order and returns every distinct outcome; so
// does AdvanceAll for timers due at one instant (each level's timer is a
// step of its own). A test keeps the candidates that agree with what it
// observed. For a history checker, Owes says which steps an operation
// still owes before it returns, and Expect checks what an acquisition
// returned when the step that decides it runs. A model without partners
// never has pending steps, and its Advance is deterministic.
//
// It is slow on purpose (quadratic in the calls): keep histories short.
package budgetmodel

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rxbulkhead/bulkhead"
)

// New returns a model of a budget created with cfg (valid) whose flows
// f0, f1, ... joined the groups flowGroups[0], flowGroups[1], ... ("": none).
func New(cfg bulkhead.BudgetConfig, flowGroups []string) *Model {
	return NewWithPartners(cfg, flowGroups, nil)
}

// NewWithPartners is New where flow i has a partner bulkhead, a *Semaphore
// created with *partners[i] (valid, not in shadow mode), if partners[i] is
// not nil (a Budget.Partner), and none if it is nil or i is past the end
// (a Budget.Flow).
func NewWithPartners(cfg bulkhead.BudgetConfig, flowGroups []string, partners []*bulkhead.Config) *Model {
	m := &Model{cfg: cfg, flows: slices.Clone(flowGroups), parts: make([]*part, len(flowGroups))}
	for i, pc := range partners {
		if pc != nil {
			m.parts[i] = &part{cfg: *pc, avail: pc.MaxConcurrentCalls}
		}
	}
	return m
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
	c.parts = make([]*part, len(m.parts))
	for i, p := range m.parts {
		if p != nil {
			q := *p
			q.queue = slices.Clone(p.queue)
			c.parts[i] = &q
		}
	}
	c.steps = slices.Clone(m.steps)
	return &c
}

// Acquire asks for weight permits of class for a call of flow, as
// AcquirePermissionAsync does, and returns the call with its state after
// the arrival (and the pass it triggered). For a flow with a partner, the
// call asks its partner first: granted there at once, it arrives at the
// budget at once; queued there, it arrives when the partner grants it.
func (m *Model) Acquire(id, flow int, class string, weight int) *Call {
	m.ownerCtx = id + 1
	defer func() { m.ownerCtx = 0 }()
	c := &Call{ID: id, Flow: flow, Class: class, Weight: weight}
	m.calls = append(m.calls, c)
	if m.parts[flow] != nil {
		m.partAcquire(len(m.calls)-1, c)
		return c
	}
	c.at = atBudget
	m.acquire(c)
	return c
}

// Owes reports whether steps that the operation on call id (its
// AcquirePermissionAsync, Cancel or FinishCall) runs before it returns are
// still pending: its arrival at the budget after its partner granted it at
// once or at its own enqueue, and the give-backs of partner permits it
// owes (FinishCall's, a Cancel's at the budget, those of calls its
// acquisition had the budget reject at once). A history checker lets
// those steps run at any point between the operation's own and its
// return, and requires none left by then.
func (m *Model) Owes(id int) bool {
	return slices.ContainsFunc(m.steps, func(s step) bool { return s.owner == id+1 }) ||
		slices.ContainsFunc(m.calls, func(c *Call) bool { return c.ID == id && c.want != "" })
}

// Expect records what call id's AcquirePermissionAsync returned, for a
// history checker: "fast" (the shared granted Acquisition: both levels
// granted it at once), "queued" (a record), or the state of a call
// rejected at once. If the call's arrival at the budget, which decides it,
// is still pending, the arrival checks it (a model whose arrival disagrees
// is Invalid); else Expect checks it now and reports whether it agrees.
func (m *Model) Expect(id int, outcome string) bool {
	for i, s := range m.steps {
		if s.kind == stepArrive && s.owner == id+1 && m.calls[s.call].ID == id {
			m.steps[i].want = outcome
			return true
		}
	}
	c := m.Get(id)
	if c != nil && c.at == atPartner && c.State == "pending" && outcome != "queued" {
		// Queued at its partner, and decided there by another goroutine
		// before the call read its partner's Acquisition: the call's own
		// goroutine takes the decision on (BudgetCall's afterPartner).
		c.want = outcome
		return true
	}
	return returned(c) == outcome
}

// Invalid reports whether a step of m found an outcome other than the one
// Expect recorded: no history reaches m.
func (m *Model) Invalid() bool { return m.invalid }

// returned is what c's AcquirePermissionAsync returned, in Expect's terms.
func returned(c *Call) string {
	switch {
	case c.Fast:
		return "fast"
	case c.State == "pending" || c.State == "granted" || c.State == "released" || c.State == "cancelled":
		return "queued"
	}
	return c.State
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
	m.ownerCtx = id + 1
	m.giveBack(c) // FinishCall: the budget's permits first, then the partner's
	m.ownerCtx = 0
	return true
}

// Cancel withdraws pending call id and reports whether it was pending:
// from its partner's queue, or from the budget's (its partner permits then
// go back, a pending step). A call between the levels (granted by its
// partner, its arrival pending) is cancelled too: its arrival gives the
// partner permits back instead, as admit does for a record whose Cancel
// won.
func (m *Model) Cancel(id int) bool {
	c := m.Get(id)
	if c == nil || c.State != "pending" {
		return false
	}
	c.State = "cancelled"
	if c.at == atTransit || c.at == atGone {
		return true // its pending step settles the partner's side
	}
	if c.at == atPartner {
		m.partLeave(c.Flow, m.index(c))
		m.partPassIfFree(c.Flow)
		return true
	}
	m.pass()
	m.ownerCtx = id + 1
	m.giveBack(c)
	m.ownerCtx = 0
	return true
}

// Advance moves the model's time to target (an offset from the budget's
// start), expiring the waits at each deadline in order and passing after
// each, as the budget's one timer does. It panics if the outcome is not
// defined (AdvanceAll gives more than one), which cannot happen without
// partners.
func (m *Model) Advance(target time.Duration) {
	all := m.AdvanceAll(target)
	if len(all) != 1 {
		panic(fmt.Sprintf("budgetmodel: Advance: %d possible outcomes, use AdvanceAll", len(all)))
	}
	*m = *all[0]
}

// AdvanceAll settles m, then moves time to target as Advance does, at each
// instant where waits expire firing each level's timer (the budget's, each
// partner's) in every order, and returns every distinct outcome (settled).
// m itself is not changed.
func (m *Model) AdvanceAll(target time.Duration) []*Model {
	var out []*Model
	seen := map[string]bool{}
	for _, x := range m.Settle() {
		next := x.nextDeadline()
		if next > target {
			x = x.Clone()
			x.now = max(x.now, target)
			if k := x.Key(); !seen[k] {
				seen[k] = true
				out = append(out, x)
			}
			continue
		}
		x = x.Clone()
		x.now = max(x.now, next)
		if x.budgetDeadline() <= x.now {
			x.steps = append(x.steps, step{kind: stepExpireBudget})
		}
		for f, p := range x.parts {
			if p != nil && x.partDeadline(f) <= x.now {
				x.steps = append(x.steps, step{kind: stepExpirePartner, flow: f})
			}
		}
		for _, y := range x.AdvanceAll(target) {
			if k := y.Key(); !seen[k] {
				seen[k] = true
				out = append(out, y)
			}
		}
	}
	return out
}

// Settle runs m's pending steps (arrivals at the budget, give-backs of
// partner permits, timers due) in every order, each atomic, and returns
// every distinct outcome, none with a pending step; m itself if it has
// none. m is not changed.
func (m *Model) Settle() []*Model {
	if len(m.steps) == 0 {
		return []*Model{m}
	}
	var out []*Model
	seen := map[string]bool{}
	var run func(x *Model)
	run = func(x *Model) {
		k := x.Key()
		if seen[k] {
			return
		}
		seen[k] = true
		if len(x.steps) == 0 {
			out = append(out, x)
			return
		}
		for i := range x.steps {
			if slices.Contains(x.steps[:i], x.steps[i]) {
				continue // the same step: the same outcome
			}
			y := x.Clone()
			s := y.steps[i]
			y.steps = slices.Delete(y.steps, i, i+1)
			y.run(s)
			run(y)
		}
	}
	run(m)
	return out
}

// Steps returns the models that running one of m's pending steps gives,
// one per distinct step (none if nothing is pending). m is not changed.
func (m *Model) Steps() []*Model {
	var out []*Model
	for i := range m.steps {
		if slices.Contains(m.steps[:i], m.steps[i]) {
			continue
		}
		y := m.Clone()
		s := y.steps[i]
		y.steps = slices.Delete(y.steps, i, i+1)
		y.run(s)
		out = append(out, y)
	}
	return out
}

// Pending reports whether m has steps left to settle.
func (m *Model) Pending() bool { return len(m.steps) > 0 }

// ChangePartner applies a valid configuration to flow's partner bulkhead,
// as its ChangeConfig does; only MaxConcurrentCalls and MaxWaitDuration
// may differ from the partner's configuration (the queue's bound and order
// are the partner's for good in this model). A waiter heavier than the new
// limit is rejected (too heavy); the partner's pass may grant waiters,
// whose arrivals are pending steps.
func (m *Model) ChangePartner(flow int, cfg bulkhead.Config) {
	p := m.parts[flow]
	p.avail += cfg.MaxConcurrentCalls - p.cfg.MaxConcurrentCalls
	p.cfg.MaxConcurrentCalls, p.cfg.MaxWaitDuration = cfg.MaxConcurrentCalls, cfg.MaxWaitDuration
	for n := 0; n < len(p.queue); {
		c := m.calls[p.queue[n]]
		if c.Weight <= p.cfg.MaxConcurrentCalls {
			n++
			continue
		}
		m.partRejectQueued(flow, p.queue[n], stPartnerHeavy)
	}
	m.partPassIfFree(flow)
}

// PartnerInUse is the permits of flow's partner bulkhead held
// (Metrics.InFlightCalls): by the calls it granted that have not given
// them back.
func (m *Model) PartnerInUse(flow int) int {
	p := m.parts[flow]
	return p.cfg.MaxConcurrentCalls - p.avail
}

// PartnerQueued is the calls waiting in flow's partner bulkhead.
func (m *Model) PartnerQueued(flow int) int { return len(m.parts[flow].queue) }

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
	b := make([]byte, 0, 64+24*len(m.calls))
	num := func(sep byte, v ...int64) {
		for _, x := range v {
			b = strconv.AppendInt(b, x, 10)
			b = append(b, sep)
		}
	}
	num(' ', int64(m.cfg.Size), int64(m.seq), int64(m.now))
	for _, c := range m.calls {
		b = append(b, '|')
		b = append(b, c.State...)
		b = append(b, ':')
		num(':', int64(c.ID), int64(c.seq), int64(c.byp))
		if m.parts[c.Flow] != nil {
			marked := int64(0)
			if c.marked {
				marked = 1
			}
			num(':', int64(c.at), int64(c.enq), marked, int64(c.pdl))
			b = append(b, c.want...)
		}
	}
	for f, p := range m.parts {
		if p != nil {
			b = append(b, "|p"...)
			num(' ', int64(f), int64(p.cfg.MaxConcurrentCalls), int64(p.cfg.MaxWaitDuration), int64(p.avail), int64(p.bypassed))
			for _, i := range p.queue {
				num(',', int64(i))
			}
		}
	}
	if len(m.steps) > 0 {
		st := slices.Clone(m.steps)
		slices.SortFunc(st, func(a, b step) int {
			if a.kind != b.kind {
				return int(a.kind) - int(b.kind)
			}
			if a.call != b.call {
				return a.call - b.call
			}
			if a.flow != b.flow {
				return a.flow - b.flow
			}
			if a.k != b.k {
				return a.k - b.k
			}
			if a.owner != b.owner {
				return a.owner - b.owner
			}
			if a.want != b.want {
				return strings.Compare(a.want, b.want)
			}
			return strings.Compare(a.reject, b.reject)
		})
		b = append(b, "|steps"...)
		for _, x := range st {
			num(',', int64(x.kind), int64(x.call), int64(x.flow), int64(x.k), int64(x.owner))
			b = append(b, x.want...)
			b = append(b, x.reject...)
		}
	}
	return string(b)
}

// Describe is Key with the partner levels spelled out, for failure
// messages.
func (m *Model) Describe() string {
	var b strings.Builder
	fmt.Fprintf(&b, "now %v, budget in use %d queued %d;", m.now, m.InUse(), m.Queued())
	for f, p := range m.parts {
		if p != nil {
			fmt.Fprintf(&b, " partner %d: limit %d avail %d bypassed %d queue %v;", f, p.cfg.MaxConcurrentCalls, p.avail, p.bypassed, p.queue)
		}
	}
	for _, c := range m.calls {
		if c.State == "pending" || c.State == "granted" {
			fmt.Fprintf(&b, " %d(f%d %s w%d)=%s@%s", c.ID, c.Flow, c.Class, c.Weight, c.State, [...]string{"budget", "partner", "transit", "gone"}[c.at])
		}
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

	// at is the level a pending call waits at (or, for a call that left
	// both queues, the last it was at): the budget, its partner, or
	// between them (granted by its partner, its arrival at the budget a
	// pending step).
	at     level
	pdl    time.Duration // deadline in the partner's queue
	marked bool          // passed over in the partner's queue (bounded bypass)
	// want is what the call's AcquirePermissionAsync returned (Expect)
	// while the call still waits at its partner: the partner decided it
	// (on another goroutine) before the call looked, so the call's own
	// goroutine takes it on and the decision is owed before it returns
	// (Owes); the step the partner's decision leaves checks it.
	want string
}

// Call states of partner rejections: the partner's *TooHeavyError, and its
// *FullError with a Reason ("rejected:partner:" + Reason.String()).
const (
	stPartnerHeavy = "rejected:partner-heavy"
	stPartner      = "rejected:partner:"
)

type level uint8

const (
	atBudget level = iota
	atPartner
	atTransit
	atGone // rejected by its partner, its Acquisition not told yet
)

// part is a partner bulkhead: a weighted Semaphore in the terms of
// docs/design.md (and of internal/linearizability's model of it).
type part struct {
	cfg      bulkhead.Config // MaxConcurrentCalls, MaxWaitDuration in force
	avail    int             // may be negative after a shrinking change
	bypassed int
	queue    []int // waiting calls (indexes in Model.calls), oldest first
}

// step is an internal step left pending by an operation (see Settle).
type step struct {
	kind stepKind
	// owner is 1 + the ID of the call whose operation runs the step
	// before it returns (on its own goroutine), 0 if none: see Owes.
	owner  int
	want   string // stepArrive of an owner: what its acquisition returned (Expect)
	reject string // stepPartnerRejects: the call's state
	call   int    // stepArrive: index in Model.calls
	flow   int    // stepGiveBack, stepExpirePartner
	k      int    // stepGiveBack
}

type stepKind uint8

const (
	stepArrive         stepKind = iota // a call the partner granted arrives at the budget
	stepGiveBack                       // k permits go back to flow's partner, and its pass
	stepExpireBudget                   // the budget's timer: expiries due now, then a pass
	stepExpirePartner                  // flow's partner's timer: expiries due now, then a pass
	stepPartnerRejects                 // the call's Acquisition learns its partner rejected it
)

// Stats counts what a model went through at its partners, so that a test
// can show that its sequences reach the rules.
type Stats struct {
	PartnerQueued     int // calls queued at their partner
	PartnerPassedOver int // times a partner's pass found a waiter heavier than its free permits
	PartnerBypassing  int // grants past a passed-over waiter
	PartnerHeldBack   int // times the bypass bound held back a waiter that fit
	GiveBacks         int // partner permits given back by a budget rejection, cancel or release
	Arrivals          int // calls granted by their partner (at once or after waiting) that arrived at the budget
}

// Stats returns the counts of m's history.
func (m *Model) Stats() Stats { return m.stats }

type Model struct {
	stats Stats
	cfg   bulkhead.BudgetConfig
	flows []string // flow -> group
	parts []*part  // flow -> its partner bulkhead, nil for a flow without
	calls []*Call
	seq   int
	now   time.Duration
	steps []step // pending internal steps, in no order
	// ownerCtx is the owner (see step) of the steps being made: those of
	// the running operation, or of the running step's owner.
	ownerCtx int
	invalid  bool // see Invalid
}

func (m *Model) index(c *Call) int { return slices.Index(m.calls, c) }

// run executes one pending step; the give-backs it leaves are its
// goroutine's, owed before the operation that left it returns if it is
// own.
func (m *Model) run(s step) {
	m.ownerCtx = s.owner
	defer func() { m.ownerCtx = 0 }()
	switch s.kind {
	case stepArrive:
		c := m.calls[s.call]
		if c.State != "pending" { // cancelled on the way: the permits go back
			m.stats.GiveBacks++
			m.parts[c.Flow].avail += c.Weight
			m.partPassIfFree(c.Flow)
			return
		}
		m.stats.Arrivals++
		fast := c.Fast                              // its partner returned it granted (partAcquire)
		c.at, c.State, c.Fast = atBudget, "", false // a newcomer at the budget: not one of its waiters yet
		m.acquire(c)
		c.Fast = c.Fast && fast // else its AcquirePermissionAsync returned a record
		if s.want != "" && returned(c) != s.want {
			m.invalid = true
		}
	case stepPartnerRejects:
		if c := m.calls[s.call]; c.State == "pending" { // else its Cancel won
			c.State = s.reject
		}
		if s.want != "" && s.want != s.reject {
			m.invalid = true
		}
	case stepGiveBack:
		m.stats.GiveBacks++
		m.parts[s.flow].avail += s.k
		m.partPassIfFree(s.flow)
	case stepExpireBudget:
		m.expireBudget()
	case stepExpirePartner:
		p := m.parts[s.flow]
		for n := 0; n < len(p.queue); {
			c := m.calls[p.queue[n]]
			if c.pdl > m.now {
				n++
				continue
			}
			m.partRejectQueued(s.flow, p.queue[n], stPartner+bulkhead.WaitTimeout.String())
		}
		m.partPassIfFree(s.flow)
	}
}

// giveBack leaves as a pending step the return of c's partner permits, if
// it has a partner (after a budget rejection, cancel or release).
func (m *Model) giveBack(c *Call) {
	if m.parts[c.Flow] != nil {
		m.steps = append(m.steps, step{kind: stepGiveBack, flow: c.Flow, k: c.Weight, owner: m.ownerCtx})
	}
}

// reject decides a call the budget holds (waiting, or arriving) with state,
// and gives its partner permits back.
func (m *Model) reject(c *Call, state string) {
	c.State = state
	m.giveBack(c)
}

// partAcquire is the partner's AcquirePermissionAsync for call c (index
// i) of weight k: the Semaphore's rules, in the order the
// linearizability model checks them.
func (m *Model) partAcquire(i int, c *Call) {
	p, k := m.parts[c.Flow], c.Weight
	switch {
	case p.avail >= k && len(p.queue) == 0:
		// Granted at once by the partner: the call arrives at the budget
		// before its AcquirePermissionAsync returns (a step it owes).
		p.avail -= k
		c.State, c.at, c.Fast = "pending", atTransit, true
		m.steps = append(m.steps, step{kind: stepArrive, call: i, owner: c.ID + 1})
	case k > p.cfg.MaxConcurrentCalls:
		c.State = stPartnerHeavy
	case p.cfg.MaxWaitDuration == 0:
		c.State = stPartner + bulkhead.NoWait.String()
	case len(p.queue) >= p.cfg.MaxQueuedCalls && p.cfg.QueueOrder != bulkhead.LIFO:
		c.State = stPartner + bulkhead.QueueFull.String()
	default:
		for len(p.queue) >= p.cfg.MaxQueuedCalls {
			m.partRejectQueued(c.Flow, p.queue[0], stPartner+bulkhead.Evicted.String())
		}
		c.State, c.at, c.pdl = "pending", atPartner, math.MaxInt64
		if w := p.cfg.MaxWaitDuration; w != bulkhead.NoTimeout && m.now <= math.MaxInt64-w {
			c.pdl = m.now + w
		}
		p.queue = append(p.queue, i)
		m.stats.PartnerQueued++
		m.partPassIfFree(c.Flow)
		if c.at == atTransit {
			// Granted by its own enqueue's pass: the partner returns its
			// record granted, and the call goes on to the budget before
			// its AcquirePermissionAsync returns, as a record (the others
			// that pass granted may arrive before it, on the goroutine
			// the partner started for them). Only the partner's shared
			// granted Acquisition makes a call fast (BudgetCall's
			// afterPartner).
			n := slices.Index(m.steps, step{kind: stepArrive, call: i})
			m.steps[n].owner = c.ID + 1
		}
	}
}

// partRejectQueued rejects call i, queued at flow's partner, with state:
// it leaves the partner's queue at once, and its own Acquisition learns
// it in a step of its own (the partner's delivery runs the call's
// callback after the partner's critical section), whose owner is the
// running operation's (an eviction is delivered before the newcomer
// returns).
func (m *Model) partRejectQueued(flow, i int, state string) {
	m.partLeave(flow, i)
	c := m.calls[i]
	c.at = atGone
	m.steps = append(m.steps, c.owedBy(step{kind: stepPartnerRejects, call: i, owner: m.ownerCtx, reject: state}))
}

// owedBy returns st, the step c's partner's decision leaves, owned by c's
// own goroutine and checking c.want if c's AcquirePermissionAsync returned
// before its partner decided it (Expect); c.want is then handed over.
func (c *Call) owedBy(st step) step {
	if c.want != "" {
		st.owner, st.want, c.want = c.ID+1, c.want, ""
	}
	return st
}

// partLeave takes call i out of flow's partner queue; the bypass count
// starts again when the last marked waiter leaves.
func (m *Model) partLeave(flow, i int) {
	p := m.parts[flow]
	n := slices.Index(p.queue, i)
	p.queue = slices.Delete(p.queue, n, n+1)
	if m.calls[i].marked && !slices.ContainsFunc(p.queue, func(j int) bool { return m.calls[j].marked }) {
		p.bypassed = 0
	}
}

// partPassIfFree is the partner's pass (docs/design.md "Weighted calls on
// a Semaphore"), run when a permit is free while calls wait: in grant
// order, grant each waiter that fits; one that does not is marked, and
// those behind it may pass it while the bypass count stays within the
// limit (a waiter held back by that bound is marked if heavier than 1); at
// most 64 waiters not granted. Each grant's arrival at the budget is a
// pending step.
func (m *Model) partPassIfFree(flow int) {
	p := m.parts[flow]
	if len(p.queue) == 0 || p.avail <= 0 {
		return
	}
	order := slices.Clone(p.queue)
	if p.cfg.QueueOrder == bulkhead.LIFO {
		slices.Reverse(order)
	}
	free, blocked, skipped := p.avail, false, 0
	for _, i := range order {
		if free <= 0 || skipped >= 64 {
			break
		}
		c := m.calls[i]
		switch {
		case c.Weight > free:
			c.marked, blocked = true, true
			skipped++
			m.stats.PartnerPassedOver++
		case blocked && p.bypassed+c.Weight > p.cfg.MaxConcurrentCalls:
			if c.Weight > 1 {
				c.marked = true
			}
			skipped++
			m.stats.PartnerHeldBack++
		default:
			if blocked {
				p.bypassed += c.Weight
				m.stats.PartnerBypassing++
			}
			m.partLeave(flow, i)
			p.avail -= c.Weight
			free -= c.Weight
			c.at = atTransit
			m.steps = append(m.steps, c.owedBy(step{kind: stepArrive, call: i}))
		}
	}
}

func (m *Model) budgetDeadline() time.Duration {
	next := time.Duration(math.MaxInt64)
	for _, w := range m.waiting() {
		next = min(next, m.deadline(w))
	}
	return next
}

func (m *Model) partDeadline(flow int) time.Duration {
	next := time.Duration(math.MaxInt64)
	for _, i := range m.parts[flow].queue {
		next = min(next, m.calls[i].pdl)
	}
	return next
}

func (m *Model) nextDeadline() time.Duration {
	next := m.budgetDeadline()
	for f, p := range m.parts {
		if p != nil {
			next = min(next, m.partDeadline(f))
		}
	}
	return next
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
		if c.State == "pending" && c.at == atBudget {
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
	if fits && len(m.waiting()) == 0 {
		c.State, c.Fast = "granted", true
		return
	}
	if c.Weight > m.attainable(c.Class, g) {
		m.reject(c, "rejected:heavy")
		return
	}
	noWait := cc.MaxWaitDuration == 0
	if noWait && !fits {
		m.reject(c, "rejected:"+bulkhead.NoWait.String())
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
			m.reject(c, "rejected:"+bulkhead.QueueFull.String())
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
					m.reject(newest, "rejected:"+bulkhead.Evicted.String())
					evicted = true
				}
			}
			if !evicted {
				m.reject(c, "rejected:"+bulkhead.QueueFull.String())
				return
			}
		}
	}
	m.seq++
	c.seq, c.enq, c.State = m.seq, m.now, "pending"
	m.pass()
	if noWait && c.State == "pending" {
		m.reject(c, "rejected:"+bulkhead.NoWait.String())
	}
}

func (m *Model) deadline(c *Call) time.Duration {
	w := m.cfg.Classes[m.classIdx(c.Class)].MaxWaitDuration
	if w == bulkhead.NoTimeout {
		return math.MaxInt64
	}
	return c.enq + w
}

// expireBudget is the budget's timer at m.now: the waits due expire, class
// by class, then a pass.
func (m *Model) expireBudget() {
	for _, c := range m.cfg.Classes {
		for _, w := range m.waiting() {
			if w.Class == c.Name && m.deadline(w) <= m.now {
				m.reject(w, "rejected:"+bulkhead.WaitTimeout.String())
			}
		}
	}
	m.pass()
}

func (m *Model) change(cfg bulkhead.BudgetConfig) {
	m.cfg = cfg
	for _, c := range m.cfg.Classes {
		for _, w := range m.waiting() {
			if w.Class == c.Name && w.Weight > m.attainable(w.Class, m.flows[w.Flow]) {
				m.reject(w, "rejected:heavy")
			}
		}
	}
	m.pass()
}
