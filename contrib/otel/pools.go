package otel

import (
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel/metric"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/pool"
)

// WithPools makes Start also observe the pools of preg with the same
// instruments and attributes as the Semaphores (a pool's permits are its
// workers: available is MaxWorkers - ActiveWorkers, the maximum
// MaxWorkers, the queue QueueDepth of QueueCapacity; the wait is the time a
// task spent queued). A pool.Registry publishes no events of its own, so
// each pool is subscribed (Pool.OnEvent) when Start or a collection first
// finds it: a pool created later is counted from the first collection that
// reports it. A pool named like a Semaphore is left out (its series would
// clash): name them apart. A nil preg is ignored.
func WithPools(preg *pool.Registry) Option {
	return optionFunc(func(c *config) { c.pools = preg })
}

// poolWatch follows the pools of a pool.Registry for Instruments: a
// listener per pool feeds the wait instruments and counts the events by
// type. The listener runs on whichever goroutine publishes a pool's event
// and takes no lock.
type poolWatch struct {
	reg    *pool.Registry
	waits  *waitInstruments
	counts sync.Map // pool name -> *[4]atomic.Uint64, by EventType-1

	mu     sync.Mutex
	subs   map[string]poolSub
	attrs  map[string]*attrSets
	closed bool
}

type poolSub struct {
	p      *pool.Pool
	remove func()
}

func newPoolWatch(reg *pool.Registry, waits *waitInstruments) *poolWatch {
	w := &poolWatch{reg: reg, waits: waits, subs: map[string]poolSub{}, attrs: map[string]*attrSets{}}
	w.sync()
	return w
}

func (w *poolWatch) record(e bulkhead.Event) {
	w.waits.record(e)
	i := uint(e.Type) - 1
	if i >= 4 {
		return
	}
	v, ok := w.counts.Load(e.Name)
	if !ok {
		v, _ = w.counts.LoadOrStore(e.Name, new([4]atomic.Uint64))
	}
	v.(*[4]atomic.Uint64)[i].Add(1)
}

// sync subscribes to new pools, forgets removed or replaced ones, and
// returns the registry's pools with their attribute sets.
func (w *poolWatch) sync() ([]*pool.Pool, []*attrSets) {
	all := w.reg.All()
	sets := make([]*attrSets, len(all))
	w.mu.Lock()
	defer w.mu.Unlock()
	seen := make(map[string]bool, len(all))
	for i, p := range all {
		name := p.Name()
		seen[name] = true
		if w.attrs[name] == nil {
			w.attrs[name] = newAttrSets(name)
		}
		sets[i] = w.attrs[name]
		if w.closed {
			continue
		}
		if sub, ok := w.subs[name]; ok && sub.p == p {
			continue
		} else if ok {
			w.forgetLocked(name, sub)
		}
		w.subs[name] = poolSub{p: p, remove: p.OnEvent(w.record)}
	}
	for name, sub := range w.subs {
		if !seen[name] {
			w.forgetLocked(name, sub)
			delete(w.subs, name)
			delete(w.attrs, name)
		}
	}
	return all, sets
}

func (w *poolWatch) forgetLocked(name string, sub poolSub) {
	sub.remove()
	w.counts.Delete(name)
	w.waits.table.Forget(name)
	w.waits.attrs.Delete(name)
}

func (w *poolWatch) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
	for _, sub := range w.subs {
		sub.remove()
	}
	w.subs = map[string]poolSub{}
}

// observe reports the pools not named like a Semaphore (skip).
func (w *poolWatch) observe(in *Instruments, o metric.Observer, skip map[string]bool) {
	all, sets := w.sync()
	for i, p := range all {
		name := p.Name()
		if skip[name] {
			continue
		}
		a := sets[i]
		m := p.Metrics()
		o.ObserveInt64(in.available, int64(max(m.MaxWorkers-m.ActiveWorkers, 0)), a.name)
		o.ObserveInt64(in.maxAllowed, int64(m.MaxWorkers), a.name)
		o.ObserveInt64(in.queued, int64(m.QueueDepth), a.name)
		o.ObserveInt64(in.maxQueued, int64(m.QueueCapacity), a.name)
		var n [4]uint64
		if v, ok := w.counts.Load(name); ok {
			for j := range n {
				n[j] = v.(*[4]atomic.Uint64)[j].Load()
			}
		}
		o.ObserveInt64(in.calls, int64(n[bulkhead.CallPermitted-1]), a.permitted)
		o.ObserveInt64(in.calls, int64(n[bulkhead.CallRejected-1]), a.rejected)
		o.ObserveInt64(in.calls, int64(n[bulkhead.CallFinished-1]), a.finished)
		o.ObserveInt64(in.calls, int64(n[bulkhead.CallCancelled-1]), a.cancelled)
		in.waits.observeRejections(o, name, a, false)
	}
}
