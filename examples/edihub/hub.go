package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/bulkheadhttp"
	"github.com/rxbulkhead/bulkhead/pool"
)

// hub posts documents to the partners' servers through some kind of
// bulkhead.
type hub interface {
	// send posts one document to partner i. It never blocks.
	send(i int, sent time.Time)
	// drain stops the run: documents still waiting for a permit are
	// withdrawn and calls in flight are cancelled; it returns when every
	// document is accounted for.
	drain()
	// leaked reports a bulkhead that still holds permits or waiters after drain.
	leaked() error
	// source is the hub's bulkheads, for /metrics.
	source() bulkhead.MetricsSource
}

// env is what every hub of a run shares.
type env struct {
	partners []*partner
	servers  []*partnerServer
	net      network
	opts     options
	rec      *recorder
}

// baseTransport is the plain net/http transport both hubs send with: enough
// idle connections per partner to keep one per permit alive.
func (e *env) baseTransport() *http.Transport {
	return &http.Transport{
		DialContext:         e.net.dial,
		MaxIdleConns:        0, // no limit across partners
		MaxIdleConnsPerHost: e.opts.permits,
		MaxConnsPerHost:     e.opts.permits, // never more connections than permits

		IdleConnTimeout:    30 * time.Second,
		DisableCompression: true,
	}
}

// document is the request for one EDI document to partner i: a small X12
// purchase order, posted as AS2 does.
func (e *env) document(ctx context.Context, i int) *http.Request {
	p := e.partners[i]
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.servers[i].url, strings.NewReader(purchaseOrder))
	if err != nil {
		panic(err) // the URL is ours: cannot fail
	}
	req.Header.Set("Content-Type", "application/edi-x12")
	req.Header.Set("AS2-From", "edihub")
	req.Header.Set("AS2-To", p.name)
	return req
}

const purchaseOrder = "ISA*00*          *00*          *ZZ*EDIHUB         *ZZ*PARTNER        *261201*0800*U*00401*000000001*0*P*>~" +
	"GS*PO*EDIHUB*PARTNER*20261201*0800*1*X*004010~ST*850*0001~BEG*00*SA*PO-1**20261201~PO1*1*12*EA*9.95**VP*SKU-1~CTT*1~SE*5*0001~GE*1*1~IEA*1*000000001~"

// finishBody reads a response to its end and closes it, which gives its
// permit back.
func finishBody(resp *http.Response) error {
	_, err := io.Copy(io.Discard, resp.Body)
	if cerr := resp.Body.Close(); err == nil {
		err = cerr
	}
	if err == nil && resp.StatusCode != http.StatusOK {
		err = errors.New(resp.Status)
	}
	return err
}

// transportHub posts with an http.Client whose Transport is a
// bulkheadhttp.Transport over a bulkhead.Registry: one Semaphore per
// partner, keyed by the AS2-To header. Documents are sent with
// Transport.Go, so a document waiting for a permit is the Acquisition
// record in its partner's queue: no goroutine, no timer of its own.
type transportHub struct {
	*env
	reg      *bulkhead.Registry
	tr       *bulkheadhttp.Transport
	base     *http.Transport
	client   *http.Client
	ctx      context.Context
	stop     context.CancelFunc
	inflight sync.WaitGroup // one count per document not yet accounted for
}

func newTransportHub(e *env) (hub, error) {
	reg, err := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: e.opts.permits, MaxWaitDuration: e.opts.maxWait, MaxQueuedCalls: e.opts.queue})
	if err != nil {
		return nil, err
	}
	return newTransportHubOver(e, reg)
}

// newTransportHubOver is a transportHub over the bulkheads of reg, for a
// mode whose registry is configured otherwise (one whose limits adapt, say).
func newTransportHubOver(e *env, reg *bulkhead.Registry) (*transportHub, error) {
	h := &transportHub{env: e, reg: reg, base: e.baseTransport()}
	var err error
	h.tr, err = bulkheadhttp.NewTransport(h.base, reg, bulkheadhttp.WithKey(func(r *http.Request) string { return r.Header.Get("AS2-To") }))
	if err != nil {
		return nil, err
	}
	h.client = &http.Client{Transport: h.tr}
	h.ctx, h.stop = context.WithCancel(context.Background())
	return h, nil
}

func (h *transportHub) send(i int, sent time.Time) {
	p := h.partners[i]
	bh, err := h.reg.Get(p.name)
	if err != nil {
		panic(err) // the registry's one configuration is valid
	}
	m := bh.Metrics()
	waited := m.QueuedCalls > 0 || m.AvailableConcurrentCalls == 0
	req := h.document(h.ctx, i)
	h.inflight.Add(1)
	// done runs at once for a rejection; for a queued document on the
	// goroutine that frees its permit, later, which then starts the
	// goroutine that posts it; for an expired wait on the bulkhead's timer.
	h.tr.Go(h.client, req, func(resp *http.Response, err error) {
		defer h.inflight.Done()
		h.record(p, sent, waited, resp, err)
	})
}

// record accounts for one document's outcome.
func (h *env) record(p *partner, sent time.Time, waited bool, resp *http.Response, err error) {
	switch {
	case errors.Is(err, bulkhead.ErrBulkheadFull):
		h.rec.rejected(p, time.Now())
	case err != nil:
		// Withdrawn or cancelled by drain; anything else is a bug of the
		// demo, which the leak check and the counts would show.
	default:
		if finishBody(resp) == nil {
			h.rec.permitted(p, waited)
			h.rec.done(p, sent, time.Now()) // permit wait + call + answer
		}
	}
}

func (h *transportHub) drain() {
	h.stop()
	h.inflight.Wait()
	h.base.CloseIdleConnections()
}

func (h *transportHub) source() bulkhead.MetricsSource { return h.reg }

func (h *transportHub) leaked() error {
	for _, bh := range h.reg.All() {
		if m := bh.Metrics(); m.InFlightCalls != 0 || m.QueuedCalls != 0 {
			return fmt.Errorf("bulkhead %s leaked: %d in flight, %d queued", bh.Name(), m.InFlightCalls, m.QueuedCalls)
		}
	}
	return nil
}

// poolHub keeps one pool.Pool per partner in a pool.Registry:
// the "thread-pool bulkhead" of this library, for blocking code. A document
// is posted by one of the partner's workers (at most permits of them,
// started on demand and then kept) with a plain http.Client, which blocks
// the worker for the length of the call; a document waiting for a worker is
// a record in the pool's bounded queue.
type poolHub struct {
	*env
	pools  []*pool.Pool
	reg    *pool.Registry
	base   *http.Transport
	client *http.Client
	ctx    context.Context
	stop   context.CancelFunc
}

func newPoolHub(e *env) (hub, error) {
	reg, err := pool.NewRegistry(pool.Config{MaxWorkers: e.opts.permits, CoreWorkers: e.opts.permits, QueueCapacity: e.opts.queue, MaxQueueWait: e.opts.maxWait})
	if err != nil {
		return nil, err
	}
	h := &poolHub{env: e, reg: reg, base: e.baseTransport()}
	h.client = &http.Client{Transport: h.base}
	h.ctx, h.stop = context.WithCancel(context.Background())
	for _, p := range e.partners {
		pl, err := h.reg.Get(p.name)
		if err != nil {
			return nil, err
		}
		h.pools = append(h.pools, pl)
	}
	return h, nil
}

func (h *poolHub) send(i int, sent time.Time) {
	p, pl := h.partners[i], h.pools[i]
	m := pl.Metrics()
	waited := m.QueueDepth > 0 || m.ActiveWorkers >= m.MaxWorkers
	req := h.document(h.ctx, i)
	f := pool.Submit(h.ctx, pl, func(context.Context) (struct{}, error) {
		resp, err := h.client.Do(req) // blocks this worker
		h.record(p, sent, waited, resp, err)
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
	h.stop() // queued tasks are withdrawn, calls in flight cancelled
	if err := h.reg.Close(context.Background()); err != nil {
		panic(err) // a background context never ends, so Close cannot give up
	}
	h.base.CloseIdleConnections()
}

func (h *poolHub) source() bulkhead.MetricsSource { return h.reg.MetricsSource() }

func (h *poolHub) leaked() error {
	for _, pl := range h.pools {
		if m := pl.Metrics(); m.ActiveWorkers != 0 || m.QueueDepth != 0 || m.PoolSize != 0 {
			return fmt.Errorf("pool %s leaked: %d workers, %d active, %d queued", pl.Name(), m.PoolSize, m.ActiveWorkers, m.QueueDepth)
		}
	}
	return nil
}
