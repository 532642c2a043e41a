package hubsim

import (
	"cmp"
	"container/heap"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing/synctest"
	"time"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/testkit"
)

// Mode is what stands between the partners' bulkheads and the hub.
type Mode int

const (
	NoBurst  Mode = iota // interactive traffic only, through the budget
	Budget               // the burst through the budget, two classes
	OneClass             // the burst through a budget with one class
	NoBudget             // the burst with partner bulkheads only, in front of a FIFO pool
)

// Modes lists the modes in table order.
var Modes = []Mode{NoBurst, Budget, OneClass, NoBudget}

func (m Mode) String() string {
	switch m {
	case NoBurst:
		return "no burst (baseline)"
	case Budget:
		return "burst, budget"
	case OneClass:
		return "burst, budget with one class"
	case NoBudget:
		return "burst, no budget (today)"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

type call struct {
	id      int
	partner int
	batch   bool
	k       int
	service time.Duration
	arrival time.Duration
	// Set by the goroutine that decides the call, under sim.mu.
	granted  time.Duration // -1 until granted
	decided  time.Duration // grant or rejection
	done     time.Duration // -1 until finished
	rejected bool
	bc       bulkhead.BudgetCall // the call's budget permits (of its partner's flow)
	// NoBudget: waiting in the pool since poolAt; gone once it timed out.
	poolAt  time.Duration
	inPool  bool
	waitEnd bool
}

const (
	evComplete uint8 = iota
	evDeadline
	evArrival
	evBurst
	evNextDoc
	evSample
)

type event struct {
	at   time.Duration
	kind uint8
	id   int // call id (complete, deadline) or partner (arrival)
}

type eventHeap []event

func (h eventHeap) Len() int { return len(h) }
func (h eventHeap) Less(i, j int) bool {
	a, b := h[i], h[j]
	if a.at != b.at {
		return a.at < b.at
	}
	if a.kind != b.kind {
		return a.kind < b.kind
	}
	return a.id < b.id
}
func (h eventHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *eventHeap) Push(x any)   { *h = append(*h, x.(event)) }
func (h *eventHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

// sampleEvery is how often the budget's or pool's use is sampled.
const sampleEvery = 10 * time.Millisecond

type sim struct {
	sc    Scenario
	mode  Mode
	clk   *testkit.VirtualClock
	start time.Time

	sems        []*bulkhead.Semaphore
	budget      *bulkhead.Budget
	flows       []*bulkhead.BudgetPartner // partner p's place in the budget (a Flow)
	interactive bulkhead.Class
	batch       bulkhead.Class
	rngs        []*rand.Rand

	mu      sync.Mutex // events, calls' decided fields, running, the pool
	events  eventHeap
	calls   []*call
	running int // permits (units) of the calls running now: the hub's use
	pool    pool

	samples     []sample
	budgetWaits []budgetWait
	docsLeft    []int // per partner, documents not sent yet (BatchSenders)
	// decided holds the outcomes delivered to callbacks, on whichever
	// goroutine decided them, for the main loop to act on in call order
	// (handOff).
	decided []outcome
}

// outcome is a call's outcome at one level, delivered to a callback.
type outcome struct {
	c      *call
	budget bool // at the budget (else at the partner)
	err    error
}

type sample struct {
	at      time.Duration
	inUse   int
	waiting int // calls waiting for the budget (or the pool)
}

type budgetWait struct {
	batch  bool // a document (else an interactive call)
	weight int
	wait   time.Duration
}

// pool is the hub's capacity without a budget: units taken in FIFO order,
// a call that does not fit holding back the ones behind it.
type pool struct {
	free  int
	queue []*call
}

// Run runs sc in mode with seed, inside bubble (which runs its argument
// in a testing/synctest bubble), and returns what it measured.
func Run(sc Scenario, mode Mode, seed uint64, bubble func(func())) Result {
	var r Result
	bubble(func() { r = run(sc, mode, seed) })
	return r
}

func run(sc Scenario, mode Mode, seed uint64) Result {
	s := &sim{sc: sc, mode: mode, clk: testkit.NewVirtualClock(time.Unix(1_800_000_000, 0))}
	s.start = s.clk.Now()
	s.pool.free = sc.Size
	s.build()
	for p := range sc.Partners {
		s.rngs = append(s.rngs, rand.New(rand.NewPCG(seed, uint64(p))))
	}
	for p := range sc.senders() {
		s.push(event{at: s.gap(p), kind: evArrival, id: p})
	}
	if mode != NoBurst {
		s.push(event{at: sc.BurstAt, kind: evBurst})
	}
	s.push(event{at: sc.BurstAt, kind: evSample})
	for {
		s.mu.Lock()
		if len(s.events) == 0 {
			s.mu.Unlock()
			break
		}
		e := heap.Pop(&s.events).(event)
		s.mu.Unlock()
		if at := s.start.Add(e.at); at.After(s.clk.Now()) {
			s.clk.AdvanceTo(at) // fires the bulkheads' and budget's expiries due by then
			s.settle()
		}
		s.process(e)
		s.settle()
	}
	return s.result(seed)
}

// settle waits until the callbacks handed to fresh goroutines have run, and
// acts on the outcomes they delivered, in call order, until none is left.
//
// A call goes from its partner's bulkhead to the budget here, on the main
// loop, not in the partner's callback (as BudgetCall does), so that a run
// does not depend on goroutine scheduling: a weighted release at a partner
// grants several waiters at once, and a Semaphore runs the callbacks of
// all but the first on fresh goroutines (docs/design.md, "Delivery: at
// once, on the deciding goroutine"); through BudgetCall they would then
// race for the budget's lock, and their order of arrival there, hence the
// budget's decisions, would change from run to run. Here they arrive in
// call order at the instant their partner granted them, as one
// BudgetCall each would but for that order. The partner permits of a call
// the budget rejects go back here too, for the same reason.
func (s *sim) settle() {
	for {
		synctest.Wait()
		s.mu.Lock()
		ds := s.decided
		s.decided = nil
		s.mu.Unlock()
		if len(ds) == 0 {
			return
		}
		slices.SortFunc(ds, func(a, b outcome) int {
			if c := cmp.Compare(a.c.id, b.c.id); c != 0 {
				return c
			}
			return cmp.Compare(b2i(a.budget), b2i(b.budget))
		})
		for _, d := range ds {
			if d.budget {
				s.budgetDecided(d.c, d.err)
			} else {
				s.partnerDecided(d.c, d.err)
			}
		}
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// deliver records an outcome delivered to a callback, for settle.
func (s *sim) deliver(c *call, budget bool, err error) {
	s.mu.Lock()
	s.decided = append(s.decided, outcome{c, budget, err})
	s.mu.Unlock()
}

// build makes the partners' bulkheads and, but in NoBudget mode, the budget.
func (s *sim) build() {
	sc := s.sc
	for p := range sc.Partners {
		wait := sc.InteractiveWait
		if p >= sc.Interactive {
			wait = sc.BatchWait
		}
		limit := sc.PartnerCap
		if p >= sc.Interactive && sc.BatchPartnerCap > 0 {
			limit = sc.BatchPartnerCap
		}
		sem, err := bulkhead.New(fmt.Sprintf("partner-%03d", p), bulkhead.Config{MaxConcurrentCalls: limit, MaxWaitDuration: wait, MaxQueuedCalls: bulkhead.Unbounded}, bulkhead.WithClock(s.clk))
		if err != nil {
			panic(err)
		}
		s.sems = append(s.sems, sem)
	}
	if s.mode == NoBudget {
		return
	}
	cfg := bulkhead.BudgetConfig{
		Size: sc.Size, MaxQueuedCalls: bulkhead.Unbounded, MaxBypass: sc.MaxBypass,
		Classes: []bulkhead.ClassConfig{
			{Name: "interactive", Headroom: sc.Headroom, MaxWaitDuration: sc.InteractiveWait, MaxQueuedCalls: bulkhead.Unbounded},
			{Name: "batch", Share: sc.BatchShare, MaxWaitDuration: sc.BatchWait, MaxQueuedCalls: bulkhead.Unbounded},
		},
	}
	if s.mode == OneClass {
		cfg.Classes = []bulkhead.ClassConfig{{Name: "all", MaxWaitDuration: sc.BatchWait, MaxQueuedCalls: bulkhead.Unbounded}}
	}
	b, err := bulkhead.NewBudget("hub", cfg, bulkhead.WithClock(s.clk))
	if err != nil {
		panic(err)
	}
	s.budget = b
	b.OnEvent(func(e bulkhead.BudgetEvent) {
		if e.Type == bulkhead.CallPermitted || e.Type == bulkhead.CallRejected {
			// A document is of the batch class, or, with one class, of
			// weight above 1 or from a partner that sends no interactive
			// call: only weight-1 calls of mixed partners are ambiguous,
			// and those are counted as interactive.
			batch := e.Class == "batch" || e.Class == "all" && (e.Weight > 1 || !sc.Mixed && partnerIndex(e.Partner) >= sc.Interactive)
			s.mu.Lock()
			s.budgetWaits = append(s.budgetWaits, budgetWait{batch: batch, weight: e.Weight, wait: e.Wait})
			s.mu.Unlock()
		}
	})
	for _, sem := range s.sems {
		// A Flow of the partner's name: the partner's permits are taken
		// by the sim (see settle), the budget's through the flow.
		p, err := b.Flow(sem.Name(), bulkhead.PartnerOptions{})
		if err != nil {
			panic(err)
		}
		s.flows = append(s.flows, p)
	}
	if s.mode == OneClass {
		s.interactive, _ = b.Class("all")
		s.batch = s.interactive
		return
	}
	s.interactive, _ = b.Class("interactive")
	s.batch, _ = b.Class("batch")
}

// partnerIndex parses the index out of a partner's name.
func partnerIndex(name string) int {
	var i int
	fmt.Sscanf(name, "partner-%d", &i)
	return i
}

func (s *sim) now() time.Duration { return s.clk.Now().Sub(s.start) }

func (s *sim) push(e event) {
	s.mu.Lock()
	heap.Push(&s.events, e)
	s.mu.Unlock()
}

// gap is the time to partner p's next interactive call (Poisson).
func (s *sim) gap(p int) time.Duration {
	return time.Duration(s.rngs[p].ExpFloat64() / s.sc.InteractiveRate * float64(time.Second))
}

func (s *sim) newCall(p int, batch bool) *call {
	c := &call{id: len(s.calls), partner: p, batch: batch, k: 1, arrival: s.now(), granted: -1, done: -1}
	rng := s.rngs[p]
	if batch {
		c.k = s.sc.weight(rng)
		c.service = logNormal(rng, s.sc.BatchMedian, s.sc.BatchSigma)
	} else {
		c.service = logNormal(rng, s.sc.InteractiveMedian, s.sc.InteractiveSigma)
	}
	s.mu.Lock()
	s.calls = append(s.calls, c)
	s.mu.Unlock()
	return c
}

func (s *sim) process(e event) {
	switch e.kind {
	case evArrival:
		s.start1(s.newCall(e.id, false))
		if next := s.now() + s.gap(e.id); next < s.sc.Duration {
			s.push(event{at: next, kind: evArrival, id: e.id})
		}
	case evBurst:
		s.docsLeft = make([]int, s.sc.Partners)
		for p := s.sc.Interactive; p < s.sc.Partners; p++ {
			n := s.sc.BatchDocs
			if s.sc.BatchSenders > 0 {
				n = min(n, s.sc.BatchSenders)
			}
			s.docsLeft[p] = s.sc.BatchDocs - n
			for range n {
				s.start1(s.newCall(p, true))
			}
		}
	case evNextDoc:
		if s.docsLeft[e.id] > 0 {
			s.docsLeft[e.id]--
			s.start1(s.newCall(e.id, true))
		}
	case evComplete:
		s.finish(s.calls[e.id])
	case evDeadline:
		s.poolDeadline(s.calls[e.id])
	case evSample:
		s.sample()
		if next := s.now() + sampleEvery; next <= s.sc.BurstAt+s.sc.Window {
			s.push(event{at: next, kind: evSample})
		}
	}
}

// start1 starts a call: c.k permits of its partner's bulkhead, then
// (partnerDecided) c.k of the budget, or c.k units of the pool.
func (s *sim) start1(c *call) {
	a := s.sems[c.partner].Call(c.k).AcquirePermissionAsync()
	if err := a.Err(); err != bulkhead.ErrPending {
		s.partnerDecided(c, err)
		return
	}
	a.OnDone(func(err error) { s.deliver(c, false, err) })
}

// partnerDecided runs on the main loop once c's partner decided it: a
// rejection ends the call, a grant takes it on to the budget or the pool.
func (s *sim) partnerDecided(c *call, err error) {
	if err != nil || s.mode == NoBudget {
		s.admitted(c, err)
		return
	}
	class := s.interactive
	if c.batch {
		class = s.batch
	}
	c.bc = s.flows[c.partner].Call(class, c.k)
	a := c.bc.AcquirePermissionAsync()
	if err := a.Err(); err != bulkhead.ErrPending {
		s.budgetDecided(c, err)
		return
	}
	a.OnDone(func(err error) { s.deliver(c, true, err) })
}

// budgetDecided runs on the main loop once the budget decided c: a
// rejection gives the partner's permits back.
func (s *sim) budgetDecided(c *call, err error) {
	s.admitted(c, err)
	if err != nil {
		s.sems[c.partner].Call(c.k).ReleasePermission()
	}
}

// admitted records c's outcome at its last level (the partner's, if it
// rejected c; the budget's; the partner's grant without a budget, which
// takes c on to the pool).
func (s *sim) admitted(c *call, err error) {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		c.rejected, c.decided = true, now
		s.nextDocLocked(c, now)
		return
	}
	if s.mode != NoBudget {
		s.grantLocked(c, now)
		return
	}
	// The partner granted it: on to the pool.
	c.poolAt, c.inPool = now, true
	s.pool.queue = append(s.pool.queue, c)
	wait := s.sc.InteractiveWait
	if c.batch {
		wait = s.sc.BatchWait
	}
	heap.Push(&s.events, event{at: now + wait, kind: evDeadline, id: c.id})
	s.poolGrantLocked(now)
}

func (s *sim) grantLocked(c *call, now time.Duration) {
	c.granted, c.decided = now, now
	s.running += c.k
	heap.Push(&s.events, event{at: now + c.service, kind: evComplete, id: c.id})
}

// poolGrantLocked starts the pool's waiters in FIFO order while the first
// one fits.
func (s *sim) poolGrantLocked(now time.Duration) {
	q := s.pool.queue
	for len(q) > 0 {
		c := q[0]
		if !c.inPool {
			q = q[1:]
			continue
		}
		if c.k > s.pool.free {
			break
		}
		q = q[1:]
		c.inPool = false
		s.pool.free -= c.k
		s.grantLocked(c, now)
	}
	s.pool.queue = q
}

func (s *sim) poolDeadline(c *call) {
	s.mu.Lock()
	if !c.inPool {
		s.mu.Unlock()
		return
	}
	c.inPool, c.rejected, c.decided, c.waitEnd = false, true, s.now(), true
	s.poolGrantLocked(s.now()) // a waiter that timed out at the head no longer holds the others back
	s.nextDocLocked(c, s.now())
	s.mu.Unlock()
	s.sems[c.partner].Call(c.k).ReleasePermission()
}

// nextDocLocked has the sender of document c send its next one (on the
// main loop, at the same instant: the event order keeps runs
// deterministic whichever goroutine ended c).
func (s *sim) nextDocLocked(c *call, now time.Duration) {
	if c.batch && s.sc.BatchSenders > 0 {
		heap.Push(&s.events, event{at: now, kind: evNextDoc, id: c.partner})
	}
}

func (s *sim) finish(c *call) {
	now := s.now()
	s.mu.Lock()
	c.done = now
	s.running -= c.k
	s.nextDocLocked(c, now)
	if s.mode == NoBudget {
		s.pool.free += c.k
		s.poolGrantLocked(now)
	}
	s.mu.Unlock()
	if s.mode != NoBudget {
		c.bc.FinishCall() // the budget's first, then the partner's, as BudgetCall
	}
	s.sems[c.partner].Call(c.k).FinishCall()
}

func (s *sim) sample() {
	waiting := 0
	if s.budget != nil {
		waiting = s.budget.Metrics().Queued
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.budget == nil {
		for _, c := range s.pool.queue {
			if c.inPool {
				waiting++
			}
		}
	}
	s.samples = append(s.samples, sample{at: s.now(), inUse: s.running, waiting: waiting})
}
