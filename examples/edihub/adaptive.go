package main

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/adaptive"
)

// adaptiveMode is transportMode with walmart's limit adaptive: package
// adaptive watches walmart's semaphore (adaptive.WatchRegistry, only the
// partners it is told about) and moves its MaxConcurrentCalls with the
// latency it measures, so the limit follows walmart's slow-down. The other
// partners keep their static limit.
var adaptiveMode = mode{"bulkheadhttp, adaptive", newAdaptiveHub}

// adaptiveConfig is walmart's. Capacity's default tolerance (RTT 5 % above
// the no-load RTT counts as queueing) suits a steady partner; walmart's
// latency is log-normal with sigma 0.5, whose mean over a 100 ms window
// wanders by about 10 %, so the demo tolerates 30 %.
func adaptiveConfig() adaptive.Config {
	return adaptive.Config{
		Algorithm: func() adaptive.Algorithm { return &adaptive.Capacity{Tolerance: 1.3} },
		Min:       2,
		Max:       200,
	}
}

// adaptiveHub is a transportHub whose registry has adaptive controllers,
// and which records walmart's limit over the run.
type adaptiveHub struct {
	*transportHub
	partners *adaptive.Registry
	walmart  *bulkhead.Semaphore
	trace    *limitTrace
	warmUp   bool
}

func newAdaptiveHub(e *env) (hub, error) {
	reg, err := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: e.opts.permits, MaxWaitDuration: e.opts.maxWait, MaxQueuedCalls: e.opts.queue})
	if err != nil {
		return nil, err
	}
	partners, err := adaptive.WatchRegistry(reg, adaptive.Config{}, adaptive.OnlyConfigured())
	if err != nil {
		return nil, err
	}
	slow := e.partners[slowPartner(e.partners)].name
	w, err := partners.Configure(slow, adaptiveConfig())
	if err != nil {
		return nil, err
	}
	th, err := newTransportHubOver(e, reg)
	if err != nil {
		partners.Stop()
		return nil, err
	}
	h := &adaptiveHub{transportHub: th, partners: partners, walmart: w.Semaphore(), trace: newLimitTrace(time.Now(), e.opts)}
	h.warmUp = e.opts.warmUp
	return h, nil
}

func (h *adaptiveHub) send(i int, sent time.Time) {
	h.trace.record(sent, h.walmart.Config().MaxConcurrentCalls)
	h.transportHub.send(i, sent)
}

// drain ends the run; the trace of a run (not of a warm-up, nor of the
// pending-cost probe, which sends all its documents at once) is kept for
// printLimitTrace.
func (h *adaptiveHub) drain() {
	h.transportHub.drain()
	h.partners.Stop()
	if !h.warmUp && h.trace.binsWithData() > 1 {
		lastLimitTrace.Store(h.trace)
	}
}

// limitTrace is walmart's limit at the end of each bin of a run.
type limitTrace struct {
	start     time.Time
	bin       time.Duration
	slowAfter time.Duration
	slowBy    float64

	mu     sync.Mutex
	limits []int // -1: no document sent in the bin
}

// lastLimitTrace is the trace of the last adaptive run, for
// printLimitTrace.
var lastLimitTrace atomic.Pointer[limitTrace]

func newLimitTrace(start time.Time, o options) *limitTrace {
	t := &limitTrace{start: start, bin: o.bin, slowAfter: o.slowAfter, slowBy: o.slowBy, limits: make([]int, int(o.duration/o.bin))}
	for i := range t.limits {
		t.limits[i] = -1
	}
	return t
}

func (t *limitTrace) record(at time.Time, limit int) {
	i := int(at.Sub(t.start) / t.bin)
	t.mu.Lock()
	if i >= 0 && i < len(t.limits) {
		t.limits[i] = limit
	}
	t.mu.Unlock()
}

func (t *limitTrace) binsWithData() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, l := range t.limits {
		if l >= 0 {
			n++
		}
	}
	return n
}

// values returns the limit per bin, each empty bin holding the limit of
// the bin before it.
func (t *limitTrace) values() []int {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]int, len(t.limits))
	prev := 0
	for i, l := range t.limits {
		if l >= 0 {
			prev = l
		}
		out[i] = prev
	}
	return out
}

// printLimitTrace writes walmart's adaptive limit over the last adaptive
// run, one value per bin, marking when walmart slowed down; it prints
// nothing if no adaptive run happened since it last printed.
func printLimitTrace(w io.Writer) {
	t := lastLimitTrace.Swap(nil)
	if t == nil {
		return
	}
	var b strings.Builder
	for i, l := range t.values() {
		if time.Duration(i)*t.bin == t.slowAfter {
			fmt.Fprintf(&b, "| ")
		}
		fmt.Fprintf(&b, "%d ", l)
	}
	fmt.Fprintf(w, "\nwalmart's adaptive limit every %v (| walmart slows %gx):\n%s\n", t.bin, t.slowBy, strings.TrimSpace(b.String()))
}
