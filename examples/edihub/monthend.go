package main

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rxbulkhead/bulkhead"
)

// The demo's second act: month-end at the hub. Every partner has its own
// bulkhead, but the hub itself has one capacity (outbound connections, CPU,
// a database) that all of them share. Interactive partners send small calls
// all along; at the burst a few batch partners re-send their month's
// documents at once, each costing 1 to 8 units of the hub. The same
// arrivals run twice:
//
//   - with a hub bulkhead.Budget: interactive calls in a higher class with
//     headroom, documents in a lower class with a small guaranteed share,
//     weighted (BudgetPartner.Call(class, weight));
//   - without one (what a hub has today): each call its partner admits
//     waits for the hub's capacity as a FIFO pool of units, for as long as
//     its partner's wait.
//
// The calls "run" for their drawn service time on a timer: no servers, no
// goroutine per call, so the act measures the admission alone. It runs in
// real time; the tests run it in a testing/synctest bubble, where time is
// virtual and the outcome is the same on every machine.

// monthEndOptions describe the act.
type monthEndOptions struct {
	interactive, batch int // partners of each kind
	size               int // the hub's capacity: the budget's size, the pool's units
	partnerCap         int // every partner's bulkhead (MaxConcurrentCalls)

	duration, burstAt time.Duration // interactive arrivals stop at duration
	bin               time.Duration // of the chart's time axis
	rate              float64       // interactive calls per second per partner
	median            time.Duration // interactive service time (log-normal, sigma 0.5)
	wait              time.Duration // an interactive call's MaxWaitDuration
	docs              int           // documents per batch partner
	docMedian         time.Duration // document service time (log-normal, sigma 0.3)
	docWait           time.Duration // a document's MaxWaitDuration
	headroom, share   int           // the interactive class's headroom, the batch class's share
	maxBypass         int
	seed              uint64
}

func defaultMonthEnd() monthEndOptions {
	return monthEndOptions{
		interactive: 90, batch: 10, size: 200, partnerCap: 20,
		duration: 4 * time.Second, burstAt: time.Second, bin: 100 * time.Millisecond,
		rate: 20, median: 40 * time.Millisecond, wait: time.Second,
		docs: 60, docMedian: 200 * time.Millisecond, docWait: 30 * time.Second,
		headroom: 10, share: 10, maxBypass: 20, seed: 1,
	}
}

// docWeights is the weight distribution of the documents: a 10 MB batch
// costs 8 units where an acknowledgement costs 1.
var docWeights = []struct {
	weight int
	share  float64
}{{1, 0.4}, {2, 0.3}, {4, 0.2}, {8, 0.1}}

// meCall is one call of the act, drawn before it starts.
type meCall struct {
	at      time.Duration // arrival, from the start
	partner int
	batch   bool
	weight  int
	service time.Duration
}

// monthEndCalls draws the arrivals of o: Poisson interactive calls on the
// first o.interactive partners until o.duration, and o.docs documents per
// batch partner at o.burstAt, in arrival order.
func monthEndCalls(o monthEndOptions) []meCall {
	var calls []meCall
	for p := range o.interactive {
		rng := rand.New(rand.NewPCG(o.seed, uint64(p)))
		for at := time.Duration(0); ; {
			at += time.Duration(rng.ExpFloat64() / o.rate * float64(time.Second))
			if at >= o.duration {
				break
			}
			calls = append(calls, meCall{at: at, partner: p, weight: 1, service: logNormal(rng, o.median, 0.5)})
		}
	}
	for b := range o.batch {
		p := o.interactive + b
		rng := rand.New(rand.NewPCG(o.seed, uint64(p)))
		for range o.docs {
			u, w := rng.Float64(), docWeights[len(docWeights)-1].weight
			for _, dw := range docWeights {
				if u < dw.share {
					w = dw.weight
					break
				}
				u -= dw.share
			}
			calls = append(calls, meCall{at: o.burstAt, partner: p, batch: true, weight: w, service: logNormal(rng, o.docMedian, 0.3)})
		}
	}
	slices.SortStableFunc(calls, func(a, b meCall) int { return int(a.at - b.at) })
	return calls
}

func logNormal(rng *rand.Rand, median time.Duration, sigma float64) time.Duration {
	return time.Duration(float64(median) * math.Exp(sigma*rng.NormFloat64()))
}

// monthEndRun is what one run of the act measured.
type monthEndRun struct {
	budget bool
	opts   monthEndOptions

	before, during histogram // interactive latency (arrival to end), by arrival: before the burst, during it
	latency        []histogram
	interactive    atomic.Int64 // interactive calls that arrived
	rejected       atomic.Int64 // interactive calls rejected (partner or hub)
	docsDone       atomic.Int64
	docsRejected   atomic.Int64
	batchEnd       atomic.Int64  // nanoseconds from the start to the last document's end
	maxStall       time.Duration // the latest the sender sent a call after its arrival time (a busy machine)

	hubWait [2]histogram   // waits in the hub (budget or pool), interactive and batch
	waitT   [2][]histogram // the same, by bin of the decision

	mu          sync.Mutex
	utilisation []float64 // sampled share of the hub in use, per sample
	queued      []int     // calls waiting for the hub, per sample
	sampleEvery time.Duration
}

func newMonthEndRun(budget bool, o monthEndOptions) *monthEndRun {
	bins := int((o.duration + o.bin - 1) / o.bin)
	r := &monthEndRun{budget: budget, opts: o, latency: make([]histogram, bins), sampleEvery: o.bin / 4}
	for c := range r.waitT {
		r.waitT[c] = make([]histogram, bins)
	}
	return r
}

func (r *monthEndRun) name() string {
	if r.budget {
		return "budget"
	}
	return "no budget (today)"
}

// bin returns the chart bin of the instant d after the start, or -1.
func (r *monthEndRun) bin(d time.Duration) int {
	if i := int(d / r.opts.bin); i >= 0 && i < len(r.latency) {
		return i
	}
	return -1
}

func classIndex(batch bool) int {
	if batch {
		return 1
	}
	return 0
}

// hubWaited records a wait in the hub that was decided at d.
func (r *monthEndRun) hubWaited(batch bool, d, wait time.Duration) {
	c := classIndex(batch)
	r.hubWait[c].record(wait)
	if i := r.bin(d); i >= 0 {
		r.waitT[c][i].record(wait)
	}
}

// admission is what stands between a partner's bulkhead and the hub.
type admission interface {
	// send starts c, whose partner permits are held (its weight of them),
	// and calls end(ok) once it has ended and given the hub back its units
	// (ok) or was rejected by the hub; the caller then gives the partner
	// permits back.
	send(c meCall, end func(ok bool))
	// use returns the units in use and the calls waiting.
	use() (inUse, queued int)
}

// runMonthEnd runs the act once, with the hub's budget or without.
func runMonthEnd(withBudget bool, o monthEndOptions, calls []meCall, metrics *metricsServer) (*monthEndRun, error) {
	r := newMonthEndRun(withBudget, o)
	runtime.GC() // the garbage of what ran before is not collected during the act
	start := time.Now()
	since := func() time.Duration { return time.Since(start) }

	sems := make([]*bulkhead.Semaphore, o.interactive+o.batch)
	for p := range sems {
		wait := o.wait
		if p >= o.interactive {
			wait = o.docWait
		}
		s, err := bulkhead.New(fmt.Sprintf("partner-%03d", p), bulkhead.Config{MaxConcurrentCalls: o.partnerCap, MaxWaitDuration: wait, MaxQueuedCalls: bulkhead.Unbounded})
		if err != nil {
			return nil, err
		}
		sems[p] = s
	}
	var adm admission
	var hub *bulkhead.Budget
	if withBudget {
		b, err := newHubBudget(o, sems)
		if err != nil {
			return nil, err
		}
		hub = b.hub
		hub.OnEvent(func(e bulkhead.BudgetEvent) {
			if e.Type == bulkhead.CallPermitted || e.Type == bulkhead.CallRejected {
				r.hubWaited(e.Class == "batch", since(), e.Wait)
			}
		})
		if metrics != nil {
			if err := metrics.registerBudget("month-end", hub); err != nil {
				return nil, err
			}
		}
		adm = b
	} else {
		adm = &fifoPool{free: o.size, size: o.size, wait: o.wait, docWait: o.docWait,
			waited: func(batch bool, wait time.Duration) { r.hubWaited(batch, since(), wait) }}
	}

	var outstanding sync.WaitGroup
	stop := make(chan struct{})
	var sampler sync.WaitGroup
	sampler.Go(func() {
		t := time.NewTicker(r.sampleEvery)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				inUse, queued := adm.use()
				r.mu.Lock()
				r.utilisation = append(r.utilisation, float64(inUse)/float64(o.size))
				r.queued = append(r.queued, queued)
				r.mu.Unlock()
			}
		}
	})

	for _, c := range calls {
		if d := c.at - since(); d > time.Millisecond {
			time.Sleep(d)
		} else {
			r.maxStall = max(r.maxStall, -d)
		}
		outstanding.Add(1)
		if !c.batch {
			r.interactive.Add(1)
		}
		// A document of weight k takes k permits of its partner's bulkhead
		// as it takes k units of the hub, in both runs.
		call := sems[c.partner].Call(c.weight)
		a := call.AcquirePermissionAsync()
		a.OnDone(func(err error) {
			if err != nil { // the partner's own bulkhead refused it
				r.ended(c, since(), false)
				outstanding.Done()
				return
			}
			adm.send(c, func(ok bool) {
				call.FinishCall()
				r.ended(c, since(), ok)
				outstanding.Done()
			})
		})
	}
	outstanding.Wait()
	close(stop)
	sampler.Wait()
	if hub != nil {
		if m := hub.Metrics(); m.InUse != 0 || m.Queued != 0 {
			return nil, fmt.Errorf("month-end: the budget still has %d permits in use and %d calls queued after the run", m.InUse, m.Queued)
		}
	}
	for _, s := range sems {
		if m := s.Metrics(); m.InFlightCalls != 0 || m.QueuedCalls != 0 {
			return nil, fmt.Errorf("month-end: %s still has %d calls in flight and %d queued after the run", s.Name(), m.InFlightCalls, m.QueuedCalls)
		}
	}
	return r, nil
}

// ended records the end of c at d after the start: ok if it ran.
func (r *monthEndRun) ended(c meCall, d time.Duration, ok bool) {
	if c.batch {
		if ok {
			r.docsDone.Add(1)
		} else {
			r.docsRejected.Add(1)
		}
		for {
			last := r.batchEnd.Load()
			if int64(d) <= last || r.batchEnd.CompareAndSwap(last, int64(d)) {
				break
			}
		}
		return
	}
	if !ok {
		r.rejected.Add(1)
		return
	}
	lat := d - c.at
	if c.at < r.opts.burstAt {
		r.before.record(lat)
	} else {
		r.during.record(lat)
	}
	if i := r.bin(c.at); i >= 0 {
		r.latency[i].record(lat)
	}
}

// hubBudget is the hub with a budget: every partner joined to it, in the
// interactive or the batch class.
type hubBudget struct {
	hub                *bulkhead.Budget
	partners           []*bulkhead.BudgetPartner
	interactive, batch bulkhead.Class
	size               int
}

func newHubBudget(o monthEndOptions, sems []*bulkhead.Semaphore) (*hubBudget, error) {
	hub, err := bulkhead.NewBudget("hub", bulkhead.BudgetConfig{
		Size:           o.size,
		MaxQueuedCalls: bulkhead.Unbounded,
		MaxBypass:      o.maxBypass,
		Classes: []bulkhead.ClassConfig{
			{Name: "interactive", Headroom: o.headroom, MaxWaitDuration: o.wait, MaxQueuedCalls: bulkhead.Unbounded},
			{Name: "batch", Share: o.share, MaxWaitDuration: o.docWait, MaxQueuedCalls: bulkhead.Unbounded},
		},
	})
	if err != nil {
		return nil, err
	}
	h := &hubBudget{hub: hub, size: o.size}
	h.interactive, _ = hub.Class("interactive")
	h.batch, _ = hub.Class("batch")
	for _, s := range sems {
		p, err := hub.Flow(s.Name(), bulkhead.PartnerOptions{})
		if err != nil {
			return nil, err
		}
		h.partners = append(h.partners, p)
	}
	return h, nil
}

// send asks the budget for c's weight in c's class; the partner's own
// permits (c's weight of them) are already held (the partner first, then the budget, as
// Budget.Partner does in one call: here the two are separate so that the
// run without a budget goes through the same partner code).
func (h *hubBudget) send(c meCall, end func(ok bool)) {
	class := h.interactive
	if c.batch {
		class = h.batch
	}
	call := h.partners[c.partner].Call(class, c.weight)
	a := call.AcquirePermissionAsync()
	a.OnDone(func(err error) {
		if err != nil {
			end(false)
			return
		}
		time.AfterFunc(c.service, func() {
			call.FinishCall()
			end(true)
		})
	})
}

func (h *hubBudget) use() (int, int) {
	m := h.hub.Metrics()
	return m.InUse, m.Queued
}

// fifoPool is the hub without a budget: its capacity as units taken in
// arrival order; a call that does not fit holds back the calls behind it
// until it fits or its wait ends.
type fifoPool struct {
	mu            sync.Mutex
	free          int
	size          int
	queue         []*poolWaiter
	wait, docWait time.Duration // how long a call may wait: its partner's wait
	waited        func(batch bool, wait time.Duration)
}

type poolWaiter struct {
	c     meCall
	since time.Time
	end   func(ok bool)
	timer *time.Timer
	gone  bool // granted or timed out (under mu)
}

func (p *fifoPool) send(c meCall, end func(ok bool)) {
	p.mu.Lock()
	if len(p.queue) == 0 && p.free >= c.weight {
		p.free -= c.weight
		p.mu.Unlock()
		p.waited(c.batch, 0)
		p.run(c, end)
		return
	}
	w := &poolWaiter{c: c, since: time.Now(), end: end}
	p.queue = append(p.queue, w)
	wait := p.wait
	if c.batch {
		wait = p.docWait
	}
	w.timer = time.AfterFunc(wait, func() {
		p.mu.Lock()
		if w.gone {
			p.mu.Unlock()
			return
		}
		w.gone = true
		p.queue = slices.DeleteFunc(p.queue, func(x *poolWaiter) bool { return x == w })
		granted := p.grantLocked() // the calls it held back
		p.mu.Unlock()
		p.waited(c.batch, time.Since(w.since))
		end(false)
		p.runAll(granted)
	})
	p.mu.Unlock()
}

func (p *fifoPool) run(c meCall, end func(ok bool)) {
	time.AfterFunc(c.service, func() {
		p.mu.Lock()
		p.free += c.weight
		granted := p.grantLocked()
		p.mu.Unlock()
		end(true)
		p.runAll(granted)
	})
}

// grantLocked takes the waiters at the head that fit, in order.
func (p *fifoPool) grantLocked() []*poolWaiter {
	var out []*poolWaiter
	for len(p.queue) > 0 && p.free >= p.queue[0].c.weight {
		w := p.queue[0]
		p.queue = p.queue[1:]
		w.gone = true
		w.timer.Stop()
		p.free -= w.c.weight
		out = append(out, w)
	}
	return out
}

func (p *fifoPool) runAll(ws []*poolWaiter) {
	for _, w := range ws {
		p.waited(w.c.batch, time.Since(w.since))
		p.run(w.c, w.end)
	}
}

func (p *fifoPool) use() (int, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.size - p.free, len(p.queue)
}

// merged returns the sum of the histograms hs.
func merged(hs []histogram) *histogram {
	var out histogram
	for i := range hs {
		for b := range hs[i].buckets {
			if n := hs[i].buckets[b].Load(); n > 0 {
				out.buckets[b].Add(n)
				out.count.Add(n)
			}
		}
	}
	return &out
}

// burstEnd is when the burst's demand ended: the last document's end, or
// the end of the interactive arrivals if sooner.
func (r *monthEndRun) burstEnd() time.Duration {
	return min(time.Duration(r.batchEnd.Load()), r.opts.duration)
}

// burstLatency is the interactive latency of the calls that arrived while
// the burst's documents were in the hub (by bin).
func (r *monthEndRun) burstLatency() *histogram {
	from, to := r.bin(r.opts.burstAt), r.bin(r.burstEnd()-1)
	if from < 0 || to < from {
		return &histogram{}
	}
	return merged(r.latency[from : to+1])
}

// busyUtilisation is the mean share of the hub in use over the samples
// taken while calls waited for it, from a quarter second after the burst
// to its end (the documents admitted into the idle hub at the burst's first
// instant run alone until then).
func (r *monthEndRun) busyUtilisation() (float64, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var sum float64
	n := 0
	for i, u := range r.utilisation {
		at := time.Duration(i+1) * r.sampleEvery
		if at >= r.opts.burstAt+250*time.Millisecond && at < r.burstEnd() && r.queued[i] > 0 {
			sum += u
			n++
		}
	}
	if n == 0 {
		return 0, 0
	}
	return sum / float64(n), n
}
