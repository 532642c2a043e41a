package bulkhead_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/testkit"
)

// TestStressBudget runs workers doing a random mix of every operation of a
// Budget and its partners at once, for -stress.duration (or
// $STRESS_DURATION, default 1.5 s) of real time on a testkit.VirtualClock
// that a goroutine of its own advances without pause, so that expiries
// race grants and cancels:
//
//   - calls of random partner (four Semaphores and a flow without one),
//     class and weight (two partners are joined as *Semaphore, so a call
//     of weight k takes k of their permits; two through a counting wrapper,
//     a bulkhead of another type, of which a call takes one permit), through AcquirePermissionAsync (kept pending across
//     operations) and the blocking AcquirePermission (with a context that
//     other workers cancel);
//   - Cancel of pending calls, expiries at both levels, FinishCall and
//     ReleasePermission;
//   - ChangeConfig of the budget (size, shares, headroom, waits, queue
//     bounds, bypass, group shares) and of the partners' Semaphores;
//   - callbacks that give the permits back at once (re-entering the
//     budget), spin for a while, call another budget call inside, cancel
//     another pending call, change the budget's config, panic (only on a
//     worker goroutine, which recovers it) or call runtime.Goexit (only on a
//     goroutine run for that purpose); a second callback on the same
//     Acquisition counts the outcomes.
//
// Independent counters (the permits the workers hold, per level and per
// group; at a weighed partner, k per call of weight k) are checked on every
// grant against the limits in force, and at
// stable points (all workers and the clock parked, every goroutine they
// started ended, so every decided outcome's callbacks finished) against
// the budget's and partners' metrics exactly, per group too.
// At the end: every call has exactly one outcome, delivered once, and
// neither level holds a permit or a waiter.
func TestStressBudget(t *testing.T) {
	d := stressRunTime(t)
	for seed := uint64(1); seed <= 2; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			r := newBudgetStress(t, seed)
			r.run(d / 2)
			t.Logf("seed %d: %d operations, %d grants, %d stable points, %d config changes; outcomes: %s",
				seed, r.ops.Load(), r.grants.Load(), r.stablePoints, r.changes.Load(), r.outcomeStats())
			if n := r.violations.Load(); n > 0 {
				t.Errorf("%d violations; first ones:\n%s", n, r.firstViolations())
			}
		})
	}
}

const (
	bsWorkers  = 6
	bsPartners = 5 // 4 with a Semaphore, the last a flow
	bsMaxK     = 3 // the heaviest call that can reach the budget through a partner (newCall)
	bsMaxSize  = 12
	bsMaxWait  = 300 * time.Microsecond
	bsStep     = 20 * time.Microsecond
	bsStableAt = 256 // operations between two stable points
)

var bsClasses = []string{"crit", "norm", "shed"}

const (
	bsLabelKey    = "bulkhead-budget-stress"
	bsSettleLimit = 20 * time.Second // real time a stable point waits for the labelled goroutines
)

type budgetStress struct {
	t        *testing.T
	clk      *testkit.VirtualClock
	b        *bulkhead.Budget
	sems     []*bulkhead.Semaphore // nil for the flow
	partners []*bulkhead.BudgetPartner
	classes  []bulkhead.Class
	groupOf  []string // partner -> group

	cfgMu sync.Mutex // serialises the ChangeConfigs (budget and partners)
	cfg   bulkhead.BudgetConfig
	// ceilMu makes a grant's count and its check against the ceilings one
	// step, ordered with every change of a ceiling: a count made under an
	// old, larger limit and checked against the limit a shrinking
	// ChangeConfig set meanwhile (after the permits were given back) was a
	// false violation. The counts go down without it (a give-back lowers
	// them before the library sees it, so they never exceed the library's).
	ceilMu    sync.Mutex
	sizeCeil  atomic.Int64
	groupCeil map[string]*atomic.Int64
	semCeil   []atomic.Int64
	held      atomic.Int64 // budget permits the harness holds (independent)
	groupHeld map[string]*atomic.Int64
	semHeld   []atomic.Int64
	weighed   []bool // partner i joined as a *Semaphore: a call takes its weight of it
	heldMu    sync.Mutex
	heldCalls []bsCall // granted, to give back
	pendingMu sync.Mutex
	pending   map[*bulkhead.Acquisition]bsCall
	allMu     sync.Mutex
	all       []*bsAcq // undecided at the last stable point, or newer
	retired   []*bsAcq
	workerIDs sync.Map // goroutine id -> true: callbacks may panic there
	exitIDs   sync.Map // goroutine id -> true: callbacks may Goexit there
	// blockersMu guards blockers (the contexts of the blocking acquires
	// in progress) and orders them with stop: a blocking acquire that
	// registers after cancelAllBlockers ran at the end sees stop and does
	// not start. It used to start and, with the clock stopped and the other
	// workers gone, wait forever for a permit nobody would give back.
	blockersMu sync.Mutex
	blockers   map[*context.CancelFunc]struct{}

	// label marks the goroutines that may run the library's code for the
	// harness: the workers and the clock while they operate (not while
	// parked, nor at a stable point), and every goroutine started from
	// them, which inherits it (the library's delivery goroutines, a
	// context's AfterFunc). A stable point waits until none is alive.
	label        pprof.LabelSet
	labelValue   string
	pauseMu      sync.Mutex // one stable point at a time, never once stop is set
	stop         atomic.Bool
	pause        atomic.Bool
	parked       sync.WaitGroup
	resume       chan struct{}
	stablePoints int
	ops, grants  atomic.Int64
	changes      atomic.Int64
	stats        [8]atomic.Int64
	violations   atomic.Int64
	vmu          sync.Mutex
	vfirst       []string
}

// countedPartner is a partner's Semaphore that counts the permits it
// grants and gets back, so that the budget giving a partner permit back
// twice (or one it never got) is seen where it happens. A grant counts
// once it is visible (Granted), not when a callback of the wrapper runs:
// a callback registered after the grant runs inline at once (the budget's
// partnerDone, which may give the permit back), while the wrapper's,
// registered before it, runs later on the deciding goroutine. So a
// give-back first counts the grants already visible whose callback has
// not run yet.
type countedPartner struct {
	*bulkhead.Semaphore
	r       *budgetStress
	out     atomic.Int64 // granted and not given back
	pending sync.Map     // *countedGrant -> true: not granted when returned
}

// countedGrant is an acquisition of the partner counted at most once, by
// its callback or by a give-back that finds it granted first.
type countedGrant struct {
	a       *bulkhead.Acquisition
	counted atomic.Bool
}

func (c *countedPartner) AcquirePermissionAsync() *bulkhead.Acquisition {
	a := c.Semaphore.AcquirePermissionAsync()
	if a.Granted() {
		c.out.Add(1)
		return a
	}
	g := &countedGrant{a: a}
	c.pending.Store(g, true)
	a.OnDone(func(err error) {
		if err == nil && g.counted.CompareAndSwap(false, true) {
			c.out.Add(1)
		}
		c.pending.Delete(g)
	})
	return a
}

func (c *countedPartner) back() {
	c.pending.Range(func(k, _ any) bool {
		if g := k.(*countedGrant); g.a.Granted() && g.counted.CompareAndSwap(false, true) {
			c.out.Add(1)
		}
		return true
	})
	if n := c.out.Add(-1); n < 0 {
		buf := make([]byte, 1<<16)
		c.r.violate("partner %q: a permit given back that was not granted (out %d)\n%s", c.Name(), n, buf[:runtime.Stack(buf, false)])
	}
}

func (c *countedPartner) ReleasePermission() { c.back(); c.Semaphore.ReleasePermission() }
func (c *countedPartner) FinishCall()        { c.back(); c.Semaphore.FinishCall() }

type bsCall struct {
	call    bulkhead.BudgetCall
	partner int
}

// bsAcq is one call: three callbacks, the counting one (done), the one
// with a behaviour (which counts behaved when it ends, however it ends),
// and a tail one that must still run once after a behaviour that panics or
// exits (tail, checked when tailSet: user code run inline by the
// behaviour, such as another call's callback that calls Goexit, may end
// the registering goroutine before it registers it). They run in this
// order only if all were registered before the outcome was published: one
// registered after runs at once on the registering goroutine, while the
// deciding goroutine may still be running the earlier ones. So a tail that
// ran says nothing of the behaviour: quiesce waits for behaved.
type bsAcq struct {
	a       *bulkhead.Acquisition
	c       bsCall
	done    atomic.Int32
	behaved atomic.Int32
	tail    atomic.Int32
	tailSet atomic.Bool
}

const (
	statGranted = iota
	statRejected
	statCancelled
	statTooHeavy
	statPanics
	statGoexits
	statInside
	statBlockingCtx
)

func newBudgetStress(t *testing.T, seed uint64) *budgetStress {
	clk := newClock()
	id := fmt.Sprintf("%s/%p", t.Name(), clk)
	r := &budgetStress{t: t, clk: clk, labelValue: id, label: pprof.Labels(bsLabelKey, id), groupCeil: map[string]*atomic.Int64{}, groupHeld: map[string]*atomic.Int64{},
		pending: map[*bulkhead.Acquisition]bsCall{}, blockers: map[*context.CancelFunc]struct{}{}, resume: make(chan struct{}),
		semCeil: make([]atomic.Int64, bsPartners), semHeld: make([]atomic.Int64, bsPartners)}
	rng := rand.New(rand.NewPCG(seed, 42))
	r.cfg = r.randomConfig(rng)
	b, err := bulkhead.NewBudget("hub", r.cfg, bulkhead.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	testkit.CheckBudget(t, b)
	r.b = b
	for _, g := range []string{"", "gold", "silver"} {
		r.groupCeil[g], r.groupHeld[g] = new(atomic.Int64), new(atomic.Int64)
	}
	r.ceilMu.Lock()
	r.setCeilings()
	r.ceilMu.Unlock()
	r.groupOf = []string{"gold", "gold", "silver", "", ""}
	r.weighed = []bool{true, false, true, false, false}
	for i := range bsPartners {
		opts := bulkhead.PartnerOptions{Group: r.groupOf[i], Class: bsClasses[i%3]}
		var p *bulkhead.BudgetPartner
		if i < bsPartners-1 {
			sem := newSemaphore(t, fmt.Sprint("p", i), r.randomSemConfig(rng), bulkhead.WithClock(clk))
			r.sems = append(r.sems, sem)
			r.semCeil[i].Store(int64(sem.Config().MaxConcurrentCalls))
			if r.weighed[i] {
				p, err = b.Partner(sem, opts) // a *Semaphore: weighed
			} else {
				p, err = b.Partner(&countedPartner{Semaphore: sem, r: r}, opts)
			}
		} else {
			r.sems = append(r.sems, nil)
			p, err = b.Flow("flow", opts)
		}
		if err != nil {
			t.Fatal(err)
		}
		r.partners = append(r.partners, p)
	}
	for _, n := range bsClasses {
		r.classes = append(r.classes, mustClass(t, b, n))
	}
	return r
}

// randomConfig is a valid budget config of at most bsMaxSize permits.
func (r *budgetStress) randomConfig(rng *rand.Rand) bulkhead.BudgetConfig {
	size := 4 + rng.IntN(bsMaxSize-3)
	cfg := bulkhead.BudgetConfig{Size: size, MaxQueuedCalls: 1 + rng.IntN(20), MaxBypass: rng.IntN(4)}
	if rng.IntN(3) == 0 {
		cfg.MaxQueuedCalls = bulkhead.Unbounded
	}
	for i, n := range bsClasses {
		c := bulkhead.ClassConfig{Name: n, MaxWaitDuration: time.Duration(rng.Int64N(int64(bsMaxWait))), MaxQueuedCalls: bulkhead.Unbounded}
		if rng.IntN(4) == 0 {
			c.MaxQueuedCalls = rng.IntN(4) + 1
		}
		if rng.IntN(6) == 0 {
			c.MaxWaitDuration = 0
		}
		if i == 2 {
			c.Share = rng.IntN(2)
		}
		if i == 0 {
			c.Headroom = rng.IntN(2)
		}
		cfg.Classes = append(cfg.Classes, c)
	}
	gold := 1 + rng.IntN(2)
	cfg.Groups = []bulkhead.GroupConfig{
		{Name: "gold", Nominal: gold, Lendable: rng.IntN(gold + 1), BorrowingLimit: rng.IntN(size)},
		{Name: "silver", Nominal: 0, BorrowingLimit: 1 + rng.IntN(size)},
	}
	if err := cfg.Validate(); err != nil {
		panic(err)
	}
	return cfg
}

func (r *budgetStress) randomSemConfig(rng *rand.Rand) bulkhead.Config {
	c := bulkhead.Config{MaxConcurrentCalls: 1 + rng.IntN(4), MaxWaitDuration: time.Duration(rng.Int64N(int64(bsMaxWait))), MaxQueuedCalls: bulkhead.Unbounded}
	if c.MaxWaitDuration == 0 {
		c.MaxQueuedCalls = 0
	}
	return c
}

// setCeilings sets, under cfgMu and ceilMu, the most each level may hold
// from now on: the new limit, or what is held now if more (a shrink absorbs
// calls in flight). What the harness counts never exceeds what the library
// holds (counted after its grant, uncounted before its give-back), and
// ceilMu orders this with every count.
func (r *budgetStress) setCeilings() {
	m := r.b.Metrics()
	r.sizeCeil.Store(int64(max(r.cfg.Size, m.InUse)))
	limits := map[string]int{"": bulkhead.Unbounded}
	for _, g := range r.cfg.Groups {
		limits[g.Name] = g.Nominal + g.BorrowingLimit
	}
	inUse := map[string]int{}
	for _, g := range m.Groups {
		inUse[g.Name] = g.InUse
	}
	for g, c := range r.groupCeil {
		c.Store(int64(max(limits[g], inUse[g])))
	}
}

// raise sets c to n if n is more.
func raise(c *atomic.Int64, n int) {
	for {
		old := c.Load()
		if int64(n) <= old || c.CompareAndSwap(old, int64(n)) {
			return
		}
	}
}

func (r *budgetStress) violate(format string, args ...any) {
	if r.violations.Add(1) <= 5 {
		r.vmu.Lock()
		r.vfirst = append(r.vfirst, fmt.Sprintf(format, args...))
		r.vmu.Unlock()
	}
}

func (r *budgetStress) firstViolations() string {
	r.vmu.Lock()
	defer r.vmu.Unlock()
	return fmt.Sprint(r.vfirst)
}

func (r *budgetStress) outcomeStats() string {
	names := []string{"granted", "rejected", "cancelled", "too heavy", "callback panics", "callback Goexits", "calls inside callbacks", "blocking withdrawn"}
	s := ""
	for i, n := range names {
		s += fmt.Sprintf("%s %d, ", n, r.stats[i].Load())
	}
	return s
}

// granted is called once per granted call, by whoever sees the grant: it
// counts the permits and checks the ceilings, then keeps the call to give
// back (or gives it back at once if release).
func (r *budgetStress) granted(c bsCall, release bool) {
	r.grants.Add(1)
	k := int64(c.call.Weight())
	g := r.groupOf[c.partner]
	r.ceilMu.Lock()
	if h := r.held.Add(k); h > r.sizeCeil.Load() {
		r.violate("budget: %d permits held by the harness, ceiling %d", h, r.sizeCeil.Load())
	}
	if h := r.groupHeld[g].Add(k); h > r.groupCeil[g].Load() {
		r.violate("group %q: %d held, ceiling %d", g, h, r.groupCeil[g].Load())
	}
	if r.sems[c.partner] != nil {
		if h := r.semHeld[c.partner].Add(r.partnerPermits(c)); h > r.semCeil[c.partner].Load() {
			r.violate("partner %d: %d held, ceiling %d (now %+v, config %+v)", c.partner, h, r.semCeil[c.partner].Load(), r.sems[c.partner].Metrics(), r.sems[c.partner].Config())
		}
	}
	r.ceilMu.Unlock()
	if release {
		r.giveBack(c, true)
		return
	}
	r.heldMu.Lock()
	r.heldCalls = append(r.heldCalls, c)
	r.heldMu.Unlock()
}

func (r *budgetStress) giveBack(c bsCall, finish bool) {
	k := int64(c.call.Weight())
	r.held.Add(-k)
	r.groupHeld[r.groupOf[c.partner]].Add(-k)
	if r.sems[c.partner] != nil {
		r.semHeld[c.partner].Add(-r.partnerPermits(c))
	}
	if finish {
		c.call.FinishCall()
	} else {
		c.call.ReleasePermission()
	}
}

// partnerPermits is what c holds of its partner's Semaphore once granted:
// its weight at a partner joined as a *Semaphore, else one.
func (r *budgetStress) partnerPermits(c bsCall) int64 {
	if r.weighed[c.partner] {
		return int64(c.call.Weight())
	}
	return 1
}

// newCall is a call of a random partner, class and weight.
func (r *budgetStress) newCall(rng *rand.Rand) bsCall {
	p := rng.IntN(bsPartners)
	cl := bulkhead.Class{}
	if rng.IntN(4) > 0 {
		cl = r.classes[rng.IntN(len(r.classes))]
	}
	k := 1 + rng.IntN(3)
	if rng.IntN(50) == 0 {
		k = bsMaxSize + 1 // too heavy for any config
	}
	return bsCall{call: r.partners[p].Call(cl, k), partner: p}
}

// acquire starts c and registers its callbacks: a first one with a random
// behaviour, then the counting one.
func (r *budgetStress) acquire(rng *rand.Rand, c bsCall) {
	a := c.call.AcquirePermissionAsync()
	x := &bsAcq{a: a, c: c}
	r.allMu.Lock()
	r.all = append(r.all, x)
	r.allMu.Unlock()
	if a.Err() == bulkhead.ErrPending {
		r.pendingMu.Lock()
		r.pending[a] = c
		r.pendingMu.Unlock()
	}
	behaviour := rng.IntN(7)
	seed := rng.Uint64()
	a.OnDone(func(error) { x.done.Add(1) })
	a.OnDone(func(err error) { r.firstCallback(x, err, behaviour, seed) })
	a.OnDone(func(error) { x.tail.Add(1) })
	x.tailSet.Store(true)
}

func (r *budgetStress) firstCallback(x *bsAcq, err error, behaviour int, seed uint64) {
	defer x.behaved.Add(1) // also on panic and Goexit
	r.pendingMu.Lock()
	delete(r.pending, x.a)
	r.pendingMu.Unlock()
	switch {
	case err == nil:
		r.stats[statGranted].Add(1)
	case errors.Is(err, bulkhead.ErrCancelled):
		r.stats[statCancelled].Add(1)
	case errors.Is(err, bulkhead.ErrTooHeavy):
		r.stats[statTooHeavy].Add(1)
	case errors.Is(err, bulkhead.ErrBulkheadFull):
		r.stats[statRejected].Add(1)
	default:
		r.violate("unexpected outcome %v", err)
	}
	if err != nil {
		return
	}
	// The grant is recorded before any behaviour runs user code: a nested
	// callback that calls Goexit may end this goroutine mid-way.
	r.granted(x.c, behaviour == 0) // 0: give back at once, re-entering the budget
	rng := rand.New(rand.NewPCG(seed, 7))
	id := goroutineID()
	switch behaviour {
	case 1: // spin a while holding the permits
		for range 1 + rng.IntN(200) {
			runtime.Gosched()
		}
	case 2: // another call inside the callback
		r.stats[statInside].Add(1)
		// The outcome is read once: a grant landing between a read of
		// Granted and one of Err (both false for it) was neither counted
		// nor given back, and the stable point found the budget holding
		// permits the harness did not.
		c := r.newCall(rng)
		a := c.call.AcquirePermissionAsync()
		switch err := a.Err(); {
		case err == nil:
			r.granted(c, true)
		case err == bulkhead.ErrPending && !a.Cancel(): // a grant or a rejection won
			<-a.Done()
			if a.Granted() {
				r.granted(c, true)
			}
		}
	case 3: // cancel some other pending call
		r.pendingMu.Lock()
		var other *bulkhead.Acquisition
		for a := range r.pending {
			other = a
			break
		}
		r.pendingMu.Unlock()
		if other != nil {
			other.Cancel() // if a grant won, its own callback keeps the permits
		}
	case 4: // change the budget's config, unless this goroutine is inside one
		if r.cfgMu.TryLock() {
			func() {
				defer r.cfgMu.Unlock() // a callback of the change may panic
				r.changeBudgetLocked(rng)
			}()
		}
	case 5: // panic, where a worker recovers it
		if _, ok := r.workerIDs.Load(id); ok && x.tailSet.Load() {
			r.stats[statPanics].Add(1)
			panic(errBudgetStressPanic)
		}
	case 6: // Goexit, where the goroutine was started for it
		if _, ok := r.exitIDs.Load(id); ok && x.tailSet.Load() {
			r.stats[statGoexits].Add(1)
			runtime.Goexit()
		}
	}
}

var errBudgetStressPanic = errors.New("budget stress: callback panics on purpose")

func (r *budgetStress) changeBudget(rng *rand.Rand) {
	r.cfgMu.Lock()
	defer r.cfgMu.Unlock()
	r.changeBudgetLocked(rng)
}

// changeBudgetLocked changes the budget's config under cfgMu: the ceilings
// are raised to the new limits first (a grant may follow at once), and set
// to the new limits (or what is held, if more) after, each under ceilMu,
// which is not held across ChangeConfig (its grants' callbacks count).
func (r *budgetStress) changeBudgetLocked(rng *rand.Rand) {
	cfg := r.randomConfig(rng)
	r.ceilMu.Lock()
	raise(&r.sizeCeil, cfg.Size)
	for _, g := range cfg.Groups {
		raise(r.groupCeil[g.Name], g.Nominal+g.BorrowingLimit)
	}
	r.ceilMu.Unlock()
	if err := r.b.ChangeConfig(cfg); err != nil {
		r.violate("ChangeConfig(%+v): %v", cfg, err)
		return
	}
	r.cfg = cfg
	r.ceilMu.Lock()
	r.setCeilings()
	r.ceilMu.Unlock()
	r.changes.Add(1)
}

func (r *budgetStress) changePartner(rng *rand.Rand) {
	i := rng.IntN(bsPartners - 1)
	r.cfgMu.Lock()
	defer r.cfgMu.Unlock()
	cfg := r.randomSemConfig(rng)
	r.ceilMu.Lock()
	raise(&r.semCeil[i], cfg.MaxConcurrentCalls)
	r.ceilMu.Unlock()
	if err := r.sems[i].ChangeConfig(cfg); err != nil {
		r.violate("partner ChangeConfig: %v", err)
		return
	}
	r.ceilMu.Lock()
	r.semCeil[i].Store(int64(max(cfg.MaxConcurrentCalls, r.sems[i].Metrics().InFlightCalls)))
	r.ceilMu.Unlock()
	r.changes.Add(1)
}

// op runs one random operation on a worker goroutine, recovering the
// callbacks' panics.
func (r *budgetStress) op(rng *rand.Rand) {
	defer func() {
		if p := recover(); p != nil {
			if p != errBudgetStressPanic {
				panic(p)
			}
		}
	}()
	switch n := rng.IntN(100); {
	case n < 40:
		r.acquire(rng, r.newCall(rng))
	case n < 65:
		r.heldMu.Lock()
		var c bsCall
		ok := len(r.heldCalls) > 0
		if ok {
			i := rng.IntN(len(r.heldCalls))
			c = r.heldCalls[i]
			r.heldCalls[i] = r.heldCalls[len(r.heldCalls)-1]
			r.heldCalls = r.heldCalls[:len(r.heldCalls)-1]
		}
		r.heldMu.Unlock()
		if ok {
			r.giveBack(c, rng.IntN(2) == 0)
		}
	case n < 75:
		r.pendingMu.Lock()
		var a *bulkhead.Acquisition
		for x := range r.pending {
			a = x
			break
		}
		r.pendingMu.Unlock()
		if a != nil {
			a.Cancel()
		}
	case n < 80:
		r.blockingAcquire(rng)
	case n < 82:
		r.changeBudget(rng)
	case n < 84:
		r.changePartner(rng)
	case n < 88:
		r.cancelABlocker()
	case n < 92:
		// An operation on a goroutine whose callbacks may call Goexit.
		c := r.newCall(rng)
		testkit.RunToEnd(func() {
			r.exitIDs.Store(goroutineID(), true)
			r.acquire(rng, c)
			r.heldMu.Lock()
			var h bsCall
			ok := len(r.heldCalls) > 0
			if ok {
				h = r.heldCalls[len(r.heldCalls)-1]
				r.heldCalls = r.heldCalls[:len(r.heldCalls)-1]
			}
			r.heldMu.Unlock()
			if ok {
				r.giveBack(h, true)
			}
		})
	default:
		m := r.b.Metrics()
		if m.InUse < 0 || m.Queued < 0 || m.Free < 0 {
			r.violate("metrics %+v", m)
		}
	}
}

func (r *budgetStress) blockingAcquire(rng *rand.Rand) {
	c := r.newCall(rng)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r.blockersMu.Lock()
	if r.stop.Load() { // set before cancelAllBlockers took blockersMu
		r.blockersMu.Unlock()
		return
	}
	r.blockers[&cancel] = struct{}{}
	r.blockersMu.Unlock()
	defer func() {
		r.blockersMu.Lock()
		delete(r.blockers, &cancel)
		r.blockersMu.Unlock()
	}()
	switch err := c.call.AcquirePermission(ctx); {
	case err == nil:
		r.granted(c, rng.IntN(2) == 0)
	case errors.Is(err, context.Canceled):
		r.stats[statBlockingCtx].Add(1)
	case errors.Is(err, bulkhead.ErrBulkheadFull), errors.Is(err, bulkhead.ErrTooHeavy):
	default:
		r.violate("AcquirePermission: %v", err)
	}
}

func (r *budgetStress) cancelABlocker() {
	r.blockersMu.Lock()
	defer r.blockersMu.Unlock()
	for c := range r.blockers {
		(*c)()
		return
	}
}

func (r *budgetStress) run(d time.Duration) {
	deadline := time.Now().Add(d)
	stop := &r.stop
	var wg sync.WaitGroup
	clockDone := make(chan struct{})
	go func() { // the clock
		defer close(clockDone)
		for !stop.Load() {
			if r.pause.Load() {
				resume := r.resume // written before pause was set
				r.parked.Done()
				<-resume
				continue
			}
			pprof.Do(context.Background(), r.label, func(context.Context) { r.clk.Advance(bsStep) })
		}
	}()
	for w := range bsWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.workerIDs.Store(goroutineID(), true)
			rng := rand.New(rand.NewPCG(uint64(w), uint64(time.Now().UnixNano())))
			for !stop.Load() {
				if r.pause.Load() {
					resume := r.resume // written before pause was set
					r.parked.Done()
					<-resume
					continue
				}
				pprof.Do(context.Background(), r.label, func(context.Context) { r.op(rng) })
				if r.ops.Add(1)%bsStableAt == 0 {
					r.stablePoint()
				}
			}
		}()
	}
	for time.Now().Before(deadline) && r.violations.Load() == 0 {
		time.Sleep(10 * time.Millisecond) // real time: how long the run lasts
	}
	r.pauseMu.Lock() // no stable point in progress: every worker sees stop
	stop.Store(true)
	r.pauseMu.Unlock()
	pprof.Do(context.Background(), r.label, func(context.Context) { r.cancelAllBlockers() })
	wg.Wait()
	<-clockDone
	r.drain()
}

// cancelAllBlockers cancels the blocking acquires in progress; once stop
// is set, no other starts after it (blockersMu).
func (r *budgetStress) cancelAllBlockers() {
	r.blockersMu.Lock()
	defer r.blockersMu.Unlock()
	for c := range r.blockers {
		(*c)()
	}
}

// stablePoint parks the other workers and the clock, waits until every
// decided outcome's callbacks have finished, and checks the metrics
// against the independent counts exactly.
//
// Two workers may both reach it (one descheduled between its count and
// here while the others do bsStableAt more operations): the second must
// not wait for pauseMu, or it never parks and the first waits for it
// forever (the run hung so, at 100% CPU). It skips, and parks in its loop.
// run holds pauseMu only to set stop, which the worker then sees.
func (r *budgetStress) stablePoint() {
	if !r.pauseMu.TryLock() {
		return
	}
	defer r.pauseMu.Unlock()
	if r.pause.Load() || r.stop.Load() {
		return
	}
	r.parked.Add(bsWorkers) // the other workers and the clock
	r.resume = make(chan struct{})
	r.pause.Store(true)
	parked := make(chan struct{})
	go func() { r.parked.Wait(); close(parked) }()
	for waiting := true; waiting; {
		select {
		case <-parked:
			waiting = false
		default:
			// A worker blocked in AcquirePermission cannot park; what
			// the cancel starts is labelled, so waitLabelled waits for it.
			pprof.Do(context.Background(), r.label, func(context.Context) { r.cancelAllBlockers() })
			runtime.Gosched()
		}
	}
	r.waitLabelled()
	r.quiesce()
	r.retireDecided()
	r.stablePoints++
	m := r.b.Metrics()
	if int64(m.InUse) != r.held.Load() {
		r.violate("stable point: budget InUse %d, harness holds %d", m.InUse, r.held.Load())
	}
	if int64(m.InUse) > r.sizeCeil.Load() {
		r.violate("stable point: budget InUse %d above ceiling %d", m.InUse, r.sizeCeil.Load())
	}
	for _, g := range m.Groups {
		if int64(g.InUse) != r.groupHeld[g.Name].Load() {
			r.violate("stable point: group %q InUse %d, harness holds %d", g.Name, g.InUse, r.groupHeld[g.Name].Load())
		}
	}
	// A call of a partner with a Semaphore holds its partner's permits
	// (its weight at a weighed partner, else one) from before it enters
	// the budget's queue until it gives back its grant (the harness counts
	// the grant in between), so the partner's permits the harness does not
	// count are those of its calls waiting in the budget: as many as those
	// calls at a partner of one permit per call, between one and bsMaxK
	// per call at a weighed one. calls returns the fewest and the most
	// calls that extra uncounted permits of partner i can be.
	calls := func(i, extra int) (lo, hi int) {
		if r.weighed[i] {
			return (extra + bsMaxK - 1) / bsMaxK, extra
		}
		return extra, extra
	}
	inBudget := m.Queued
	for i, s := range r.sems {
		if s == nil {
			continue
		}
		sm := s.Metrics()
		extra := sm.InFlightCalls - int(r.semHeld[i].Load())
		lo, _ := calls(i, extra)
		if extra < 0 || lo > inBudget {
			r.violate("stable point: partner %d in flight %d, harness holds %d, %d waiting in the budget", i, sm.InFlightCalls, r.semHeld[i].Load(), inBudget)
		}
		inBudget -= lo
	}
	// Per group: exactly, if all its partners take one permit per call and
	// none is a flow; else within the bounds of calls (a group with a flow
	// may have more waiting).
	for _, g := range m.Groups {
		lo, hi, flows := 0, 0, false
		for i, s := range r.sems {
			switch {
			case r.groupOf[i] != g.Name:
			case s == nil:
				flows = true
			default:
				l, h := calls(i, s.Metrics().InFlightCalls-int(r.semHeld[i].Load()))
				lo, hi = lo+l, hi+h
			}
		}
		if lo > g.Queued || !flows && hi < g.Queued {
			r.violate("stable point: group %q has %d calls queued in the budget, its partners' permits the harness does not hold are %d to %d calls (%+v)", g.Name, g.Queued, lo, hi, m.Groups)
		}
	}
	r.pause.Store(false)
	close(r.resume)
}

// waitLabelled waits (at a stable point, or at the end once the workers
// and the clock are gone) until no goroutine with the run's label is alive:
// the library's delivery goroutines and their callbacks have ended. quiesce
// alone missed those of calls the harness registers no callback on (a
// partner's grant running the budget's enqueue, a call made inside a
// callback), so the metrics were read mid-delivery. It gives up after
// bsSettleLimit of real time with a violation listing those goroutines.
func (r *budgetStress) waitLabelled() {
	deadline := time.Now().Add(bsSettleLimit)
	for i := 0; ; i++ {
		n, stacks := r.labelled()
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			r.violate("%d goroutines labelled %s=%s still alive after %v (workers and clock parked):\n%s",
				n, bsLabelKey, r.labelValue, bsSettleLimit, stacks)
			return
		}
		if i < 100 {
			runtime.Gosched()
		} else {
			time.Sleep(100 * time.Microsecond) // real time: the goroutines are running, not the clock
		}
	}
}

// labelled counts the live goroutines with the run's label, from the
// goroutine profile (debug=1: a line "N @ pcs" per distinct stack and label
// set, then "# labels: {...}" if it has labels, then the frames), and
// returns their entries.
func (r *budgetStress) labelled() (int, string) {
	var b strings.Builder
	if err := pprof.Lookup("goroutine").WriteTo(&b, 1); err != nil {
		panic(err) // a strings.Builder takes every write
	}
	want := strconv.Quote(bsLabelKey) + ":" + strconv.Quote(r.labelValue)
	n, count, in := 0, 0, false
	var out strings.Builder
	for line := range strings.Lines(b.String()) {
		if c, _, ok := strings.Cut(line, " @ "); ok {
			if k, err := strconv.Atoi(c); err == nil {
				count, in = k, false
				continue
			}
		}
		if strings.HasPrefix(line, "# labels: ") && strings.Contains(line, want) {
			n, in = n+count, true
			fmt.Fprintf(&out, "%d goroutines:\n", count)
		}
		if in {
			out.WriteString(line)
		}
	}
	return n, out.String()
}

// retireDecided moves the decided acquisitions (whose callbacks have run,
// after quiesce) out of the list quiesce scans; drain checks them too.
func (r *budgetStress) retireDecided() {
	r.allMu.Lock()
	defer r.allMu.Unlock()
	keep := r.all[:0]
	for _, x := range r.all {
		if x.a.Err() == bulkhead.ErrPending {
			keep = append(keep, x)
		} else {
			r.retired = append(r.retired, x)
		}
	}
	clear(r.all[len(keep):])
	r.all = keep
}

// quiesce waits until every decided acquisition's callbacks have finished
// (they may still run on fresh goroutines). The behaviour's end is waited
// for itself (behaved), not through the tail: a tail registered after the
// outcome was published runs at once on the registering worker, possibly
// before the deciding goroutine has recorded the grant, which left a
// granted call that the harness did not count yet at the stable point and
// that drain never gave back.
func (r *budgetStress) quiesce() {
	for {
		busy := false
		r.allMu.Lock()
		for _, x := range r.all {
			if x.a.Err() != bulkhead.ErrPending && (x.done.Load() == 0 || x.behaved.Load() == 0 || x.tailSet.Load() && x.tail.Load() == 0) {
				busy = true
				break
			}
		}
		r.allMu.Unlock()
		if !busy {
			return
		}
		runtime.Gosched()
	}
}

// TestBudgetStressWaitsForTheGoroutinesItsWorkersStart checks the
// harness's own wait: a goroutine started under the run's label is seen
// (it inherits the label) until it ends. If the goroutine profile's format
// changed, stable points would stop waiting without a word; this fails
// instead.
func TestBudgetStressWaitsForTheGoroutinesItsWorkersStart(t *testing.T) {
	r := newBudgetStress(t, 1)
	release, ended := make(chan struct{}), make(chan struct{})
	pprof.Do(context.Background(), r.label, func(context.Context) {
		go func() {
			defer close(ended)
			<-release
		}()
	})
	if n, stacks := r.labelled(); n != 1 {
		t.Fatalf("%d goroutines labelled, want 1 (the one started under the label):\n%s", n, stacks)
	}
	if n, _ := newBudgetStress(t, 2).labelled(); n != 0 {
		t.Fatalf("another run sees %d goroutines with its label, want 0", n)
	}
	close(release)
	<-ended
	r.waitLabelled()
	if n := r.violations.Load(); n != 0 {
		t.Fatalf("waitLabelled: %s", r.firstViolations())
	}
}

// drain ends the run: every pending call is cancelled (or, if a grant won,
// its permits come back through its callback), every held call given back,
// then each call must have had exactly one outcome.
func (r *budgetStress) drain() {
	// What the give-backs and cancels start is labelled, so that
	// waitLabelled sees the run's every callback end before the checks.
	pprof.Do(context.Background(), r.label, func(context.Context) { r.drainCalls() })
	r.waitLabelled()
	r.checkOutcomes()
}

// drainCalls cancels the pending calls and gives back the held ones until
// none is left.
func (r *budgetStress) drainCalls() {
	for {
		r.pendingMu.Lock()
		var as []*bulkhead.Acquisition
		for a := range r.pending {
			as = append(as, a)
		}
		r.pendingMu.Unlock()
		for _, a := range as {
			a.Cancel()
		}
		r.quiesce()
		r.heldMu.Lock()
		hs := r.heldCalls
		r.heldCalls = nil
		r.heldMu.Unlock()
		for _, c := range hs {
			r.giveBack(c, true)
		}
		r.quiesce()
		r.pendingMu.Lock()
		left := len(r.pending)
		r.pendingMu.Unlock()
		r.heldMu.Lock()
		left += len(r.heldCalls)
		r.heldMu.Unlock()
		if left == 0 {
			return
		}
	}
}

// checkOutcomes checks, at the end, that each call had exactly one
// outcome, delivered once, and that the harness holds no permit.
func (r *budgetStress) checkOutcomes() {
	r.allMu.Lock()
	defer r.allMu.Unlock()
	for _, x := range append(r.all, r.retired...) {
		if x.a.Err() == bulkhead.ErrPending {
			r.violate("a call is still pending at the end")
		}
		if n := x.done.Load(); n != 1 {
			r.violate("a call's counting callback ran %d times", n)
		}
		if n := x.behaved.Load(); n != 1 {
			r.violate("a call's behaviour callback ended %d times", n)
		}
		if n := x.tail.Load(); x.tailSet.Load() && n != 1 {
			r.violate("a call's last callback ran %d times (after one that may panic or exit)", n)
		}
	}
	if r.held.Load() != 0 {
		r.violate("the harness still counts %d permits", r.held.Load())
	}
}
