package main

import (
	"fmt"
	"runtime"
	"slices"
	"time"
)

// pendingCost is what one document waiting for its permit costs the
// process, measured with the hub of a mode: the change in goroutines and in
// live heap (after a GC) per waiting document.
type pendingCost struct {
	goroutines float64
	heap       float64 // bytes
}

// probeCalls is how many documents the probe leaves waiting per sample;
// probeSamples samples are taken one after the other and the median is
// reported, so that memory another goroutine frees during one sample (a
// connection closing) cannot make the figure negative.
const (
	probeCalls   = 1000
	probeSamples = 3
)

// probePending holds walmart's server (every request it receives waits),
// fills walmart's permits through a fresh hub of kind m, then sends
// probeCalls more documents, which wait for a permit, and measures what
// they added, probeSamples times. Then it drains the hub and lets the
// server go.
func probePending(m mode, e *env) (pendingCost, error) {
	pe := *e
	pe.opts.queue = probeCalls * probeSamples
	pe.opts.maxWait = time.Minute
	pe.rec = newRecorder(time.Now(), pe.opts)
	h, err := m.newHub(&pe)
	if err != nil {
		return pendingCost{}, err
	}
	slow := slowPartner(e.partners)
	s := e.servers[slow]
	release := s.holdRequests()
	defer release()
	for range pe.opts.permits {
		h.send(slow, time.Now())
	}
	if err := s.awaitHeld(pe.opts.permits, 10*time.Second); err != nil {
		h.drain()
		return pendingCost{}, err
	}
	var goroutines, heap [probeSamples]float64
	g0, heap0 := liveCost()
	for i := range probeSamples {
		for range probeCalls {
			h.send(slow, time.Now())
		}
		g1, heap1 := liveCost()
		goroutines[i] = float64(g1-g0) / probeCalls
		heap[i] = float64(int64(heap1)-int64(heap0)) / probeCalls
		g0, heap0 = g1, heap1
	}
	h.drain() // withdraws the waiting documents, cancels the held calls
	if err := h.leaked(); err != nil {
		return pendingCost{}, fmt.Errorf("probe: %w", err)
	}
	return pendingCost{goroutines: median(goroutines[:]), heap: median(heap[:])}, nil
}

// median returns the median of xs (which it sorts).
func median(xs []float64) float64 {
	slices.Sort(xs)
	return xs[len(xs)/2]
}

// liveCost returns the goroutines and the live heap after a full GC.
func liveCost() (goroutines int, heap uint64) {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return runtime.NumGoroutine(), ms.HeapAlloc
}

// slowPartner is the index of the partner that slows down (walmart).
func slowPartner(ps []*partner) int {
	for i, p := range ps {
		if p.slow {
			return i
		}
	}
	return 0
}
