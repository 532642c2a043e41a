package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/pool"
)

// hub sends documents to partners through some kind of bulkhead.
type hub interface {
	// send hands one document for partner i to the bulkhead; the call takes
	// lat once it has a permit. It never blocks.
	send(i int, sent time.Time, lat time.Duration)
	// drain stops new calls (documents still queued are dropped without a
	// call) and waits until every call in flight has finished.
	drain()
	// leaked reports a bulkhead that still holds permits or waiters after drain.
	leaked() error
}

// recorder turns what the bulkheads do into the statistics of a run. Its
// methods are called from any goroutine.
type recorder struct {
	walmart, healthy *class
	slowT, healthyT  *series
	tl               timeline
}

func (r *recorder) of(p *partner) (*class, *series) {
	if p.slow {
		return r.walmart, r.slowT
	}
	return r.healthy, r.healthyT
}

func (r *recorder) permitted(p *partner, waited bool) {
	c, _ := r.of(p)
	c.permitted.Add(1)
	if waited {
		c.queued.Add(1)
	}
}

func (r *recorder) rejected(p *partner, at time.Time) {
	c, s := r.of(p)
	c.rejected.Add(1)
	if i, ok := r.tl.index(at); ok {
		s.rejected[i].Add(1)
	}
}

func (r *recorder) done(p *partner, sent, at time.Time) {
	c, s := r.of(p)
	d := at.Sub(sent)
	c.latency.record(d)
	if i, ok := r.tl.index(at); ok {
		s.latency[i].record(d)
	}
}

// registryHub keeps one bulkhead.Semaphore per partner in a
// bulkhead.Registry. A document waiting for a permit is the Acquisition
// record in the partner's queue: no goroutine, no timer of its own.
type registryHub struct {
	partners []*partner
	bhs      []*bulkhead.Semaphore
	rec      *recorder
	stopping atomic.Bool
	inflight sync.WaitGroup // one count per document not yet finished
}

func newRegistryHub(ps []*partner, cfg bulkhead.Config, rec *recorder) (*registryHub, error) {
	reg, err := bulkhead.NewRegistry(cfg)
	if err != nil {
		return nil, err
	}
	h := &registryHub{partners: ps, rec: rec}
	for _, p := range ps {
		bh, err := reg.Get(p.name)
		if err != nil {
			return nil, err
		}
		h.bhs = append(h.bhs, bh)
	}
	return h, nil
}

func (h *registryHub) send(i int, sent time.Time, lat time.Duration) {
	p, bh := h.partners[i], h.bhs[i]
	a := bh.AcquirePermissionAsync()
	waited := a.Err() == bulkhead.ErrPending
	h.inflight.Add(1)
	// OnDone runs at once when the outcome is known, else later on the
	// goroutine that frees a permit (or on the bulkhead's timer for an
	// expiry). It owns the permit when err is nil.
	a.OnDone(func(err error) {
		if err != nil {
			h.rec.rejected(p, time.Now())
			h.inflight.Done()
			return
		}
		if h.stopping.Load() {
			bh.ReleasePermission() // the run is over: do not call
			h.inflight.Done()
			return
		}
		h.rec.permitted(p, waited)
		time.AfterFunc(lat, func() {
			bh.FinishCall()
			h.rec.done(p, sent, time.Now())
			h.inflight.Done()
		})
	})
}

func (h *registryHub) drain() {
	h.stopping.Store(true)
	h.inflight.Wait()
}

func (h *registryHub) leaked() error {
	for _, bh := range h.bhs {
		if m := bh.Metrics(); m.InFlightCalls != 0 || m.QueuedCalls != 0 {
			return fmt.Errorf("bulkhead %s leaked: %d in flight, %d queued", bh.Name(), m.InFlightCalls, m.QueuedCalls)
		}
	}
	return nil
}

// poolHub keeps one pool.Pool per partner in a pool.Registry:
// the "thread-pool bulkhead" of this library, for blocking code. A call
// runs on one of the partner's workers (at most permits of them, started on
// demand and then kept) and blocks it for the length of the call; a
// document waiting for a worker is a record in the pool's bounded queue.
type poolHub struct {
	partners []*partner
	pools    []*pool.Pool
	reg      *pool.Registry
	rec      *recorder
	stopping atomic.Bool
}

func newPoolHub(ps []*partner, cfg pool.Config, rec *recorder) (*poolHub, error) {
	reg, err := pool.NewRegistry(cfg)
	if err != nil {
		return nil, err
	}
	h := &poolHub{partners: ps, reg: reg, rec: rec}
	for _, p := range ps {
		pl, err := h.reg.Get(p.name)
		if err != nil {
			return nil, err
		}
		h.pools = append(h.pools, pl)
	}
	return h, nil
}

func (h *poolHub) send(i int, sent time.Time, lat time.Duration) {
	p, pl := h.partners[i], h.pools[i]
	m := pl.Metrics()
	waited := m.QueueDepth > 0 || m.ActiveWorkers >= m.MaxWorkers
	f := pool.Submit(context.Background(), pl, func(context.Context) (struct{}, error) {
		if h.stopping.Load() {
			return struct{}{}, nil // the run is over: do not call
		}
		h.rec.permitted(p, waited)
		time.Sleep(lat) // the blocking call, on the worker
		h.rec.done(p, sent, time.Now())
		return struct{}{}, nil
	})
	// Rejected at once (QueueFull), or later on the pool's timer (WaitTimeout).
	f.OnDone(func(_ struct{}, err error) {
		if errors.Is(err, bulkhead.ErrBulkheadFull) {
			h.rec.rejected(p, time.Now())
		}
	})
}

func (h *poolHub) drain() {
	h.stopping.Store(true)
	// Queued tasks still run, but return at once; Close waits for the workers.
	if err := h.reg.Close(context.Background()); err != nil {
		panic(err) // a background context never ends, so Close cannot give up
	}
}

func (h *poolHub) leaked() error {
	for _, pl := range h.pools {
		if m := pl.Metrics(); m.ActiveWorkers != 0 || m.QueueDepth != 0 || m.PoolSize != 0 {
			return fmt.Errorf("pool %s leaked: %d workers, %d active, %d queued", pl.Name(), m.PoolSize, m.ActiveWorkers, m.QueueDepth)
		}
	}
	return nil
}
