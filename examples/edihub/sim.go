package main

import (
	"container/heap"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"strings"
	"time"
)

// mode is a kind of hub, i.e. of bulkhead, that a run posts through.
type mode struct {
	name   string
	newHub func(e *env) (hub, error)
}

func (m mode) String() string { return m.name }

var (
	// transportMode: an http.Client over bulkheadhttp.Transport and a
	// bulkhead.Registry, documents sent with Transport.Go.
	transportMode = mode{"bulkheadhttp", newTransportHub}
	// poolMode: a pool.Registry, a goroutine pool per partner
	// whose workers post with a plain http.Client.
	poolMode = mode{"goroutine pool", newPoolHub}
)

// options describe a run. Each bulkhead has permits permits (or workers) and
// a queue of queue documents, which may wait maxWait.
type options struct {
	partners    int
	duration    time.Duration
	slowAfter   time.Duration
	slowBy      float64
	seed        uint64
	healthyRate float64 // documents per second to the partners other than walmart
	permits     int
	queue       int
	maxWait     time.Duration
	bin         time.Duration
	tick        time.Duration  // how often the sender wakes up
	progress    io.Writer      // progress bar; nil: none
	warmUp      bool           // a throwaway run: no pending-cost probe
	metrics     *metricsServer // serves each run's bulkheads on /metrics; nil: none
}

func defaultOptions() options {
	return options{
		partners:    500,
		duration:    6 * time.Second,
		slowAfter:   2 * time.Second,
		slowBy:      10,
		seed:        1,
		healthyRate: 2000,
		permits:     20,
		queue:       100,
		maxWait:     2 * time.Second,
		bin:         250 * time.Millisecond,
		tick:        time.Millisecond,
	}
}

func (o options) validate() error {
	switch {
	case o.partners < 2:
		return fmt.Errorf("partners must be >= 2, got %d", o.partners)
	case o.duration < o.bin:
		return fmt.Errorf("duration must be >= %v, got %v", o.bin, o.duration)
	case o.slowAfter < 0 || o.slowAfter >= o.duration:
		return fmt.Errorf("slow-after must be in [0, duration), got %v", o.slowAfter)
	case o.healthyRate <= 0:
		return fmt.Errorf("rate must be > 0, got %v", o.healthyRate)
	case o.slowBy < 1:
		return fmt.Errorf("slow-by must be >= 1, got %v", o.slowBy)
	}
	return nil
}

// result is what one run measured.
type result struct {
	mode             mode
	pending          pendingCost // per document waiting for a permit (probePending)
	opts             options
	walmart, healthy *class
	slowT, healthyT  *series
	peakGoroutines   int
	peakHeap         uint64 // live heap, sampled once per bin
	peakStacks       uint64 // goroutine stacks, sampled once per bin
	cpu              time.Duration
	maxStall         time.Duration // longest gap between two wake-ups of the sender
}

// arrival is the next document of one partner; arrivals form a min-heap.
type arrival struct {
	at time.Time
	i  int
}

type arrivals []arrival

func (a arrivals) Len() int           { return len(a) }
func (a arrivals) Less(i, j int) bool { return a[i].at.Before(a[j].at) }
func (a arrivals) Swap(i, j int)      { a[i], a[j] = a[j], a[i] }
func (a *arrivals) Push(x any)        { *a = append(*a, x.(arrival)) }
func (a *arrivals) Pop() any {
	old := *a
	x := old[len(old)-1]
	*a = old[:len(old)-1]
	return x
}

// newRecorder returns the recorder of a run that starts at start.
func newRecorder(start time.Time, o options) *recorder {
	bins := int(o.duration / o.bin)
	return &recorder{walmart: &class{}, healthy: &class{}, slowT: newSeries(bins), healthyT: newSeries(bins),
		tl: timeline{start: start, bin: o.bin, bins: bins}}
}

// simulate posts Poisson traffic to the partners' servers for o.duration
// through a hub of kind m, drains it, then measures what a waiting
// document costs with the same kind of hub.
func simulate(m mode, ps []*partner, servers []*partnerServer, nw network, o options) (*result, error) {
	if err := o.validate(); err != nil {
		return nil, err
	}
	cpu0 := cpuTime()
	start := time.Now()
	rec := newRecorder(start, o)
	res := &result{mode: m, opts: o, walmart: rec.walmart, healthy: rec.healthy, slowT: rec.slowT, healthyT: rec.healthyT}
	e := &env{partners: ps, servers: servers, net: nw, opts: o, rec: rec}
	h, err := m.newHub(e)
	if err != nil {
		return nil, err
	}
	if o.metrics != nil && !o.warmUp {
		if err := o.metrics.register(m.name, h.source()); err != nil {
			return nil, err
		}
	}
	slow := slowPartner(ps)
	servers[slow].slowBy(1)

	rng := rand.New(rand.NewPCG(o.seed, uint64(len(m.name))+1))
	next := func(i int, from time.Time) time.Time {
		return from.Add(time.Duration(rng.ExpFloat64() / ps[i].rate * float64(time.Second)))
	}
	q := make(arrivals, len(ps))
	for i := range ps {
		q[i] = arrival{at: next(i, start), i: i}
	}
	heap.Init(&q)
	slowAt, end := start.Add(o.slowAfter), start.Add(o.duration)
	slowed := false

	ticker := time.NewTicker(o.tick)
	defer ticker.Stop()
	nextSample, prev := start, start
	for now := start; now.Before(end); now = <-ticker.C {
		res.maxStall = max(res.maxStall, now.Sub(prev))
		prev = now
		if !slowed && !now.Before(slowAt) {
			servers[slow].slowBy(o.slowBy) // walmart's endpoint slows down
			slowed = true
		}
		for !q[0].at.After(now) {
			a := &q[0]
			h.send(a.i, now)
			a.at = next(a.i, a.at)
			heap.Fix(&q, 0)
		}
		if !now.Before(nextSample) {
			res.sample()
			res.showProgress(o.progress, now.Sub(start))
			nextSample = nextSample.Add(o.bin)
		}
	}
	res.showProgress(o.progress, o.duration)
	if o.progress != nil {
		fmt.Fprintln(o.progress)
	}
	h.drain()
	res.cpu = cpuTime() - cpu0
	servers[slow].slowBy(1)
	if err := h.leaked(); err != nil {
		return nil, err
	}
	if o.warmUp {
		return res, nil
	}
	if res.pending, err = probePending(m, e); err != nil {
		return nil, err
	}
	return res, nil
}

// warmUp runs a second of the same traffic, without the slow-down, through
// a throwaway hub of kind m: the first run of a process otherwise pays for
// growing its heap and stacks and for the partners' first connections,
// which the runs after it do not, and the comparison would favour them.
func warmUp(m mode, ps []*partner, servers []*partnerServer, nw network, o options) error {
	o.duration, o.slowAfter, o.slowBy = time.Second, 0, 1
	o.progress, o.warmUp, o.metrics = nil, true, nil
	_, err := simulate(m, ps, servers, nw, o)
	return err
}

// sample records the peak goroutines and memory of the process.
func (r *result) sample() {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	r.peakGoroutines = max(r.peakGoroutines, runtime.NumGoroutine())
	r.peakHeap = max(r.peakHeap, ms.HeapAlloc)
	r.peakStacks = max(r.peakStacks, ms.StackInuse)
}

func (r *result) showProgress(w io.Writer, elapsed time.Duration) {
	if w == nil {
		return
	}
	const width = 30
	done := int(float64(width) * float64(elapsed) / float64(r.opts.duration))
	done = min(max(done, 0), width)
	state := "walmart healthy"
	if elapsed >= r.opts.slowAfter {
		state = "walmart SLOW x" + fmt.Sprint(r.opts.slowBy)
	}
	fmt.Fprintf(w, "\r%-17s [%s%s] %4.1fs/%.0fs  %-18s walmart rejected %6d  healthy rejected %d ",
		r.mode, strings.Repeat("#", done), strings.Repeat(".", width-done),
		elapsed.Seconds(), r.opts.duration.Seconds(), state,
		r.walmart.rejected.Load(), r.healthy.rejected.Load())
}
