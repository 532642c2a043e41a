package pool

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/internal/catalog"
)

// ErrRegistryFull is wrapped by the error of Registry.Get and GetWithConfig
// when the registry already holds WithMaxPools pools and the name is not
// one of them. SubmitKeyed never sees it: it goes to the catch-all.
var ErrRegistryFull = errors.New("pool registry is full")

// WithIdleTimeout makes the registry evict, and close, a pool that has had
// no SubmitKeyed call in progress (no Future of one not done yet) for
// idle; the next SubmitKeyed for its key creates it again from its
// configuration. Pools handed out by Get, GetWithConfig or Find are pinned
// and never evicted. One sweep per registry runs every idle/2 on the
// registry's Clock (WithClock), only while the registry holds unpinned
// pools, on the Clock's timer goroutine (testkit.VirtualClock: the caller
// of Advance); it closes the pools it evicted after it let go of the
// registry's lock (an idle pool has no task, so Close returns at once).
// idle must be positive; NewRegistry fails otherwise.
func WithIdleTimeout(idle time.Duration) RegistryOption {
	return registryOptionFunc(func(r *Registry) {
		if idle <= 0 {
			r.setOptErr(fmt.Errorf("pool: NewRegistry: WithIdleTimeout: idle timeout must be positive, got %v", idle))
			return
		}
		r.idle = idle
	})
}

// WithMaxPools caps the number of pools at max (the catch-all not
// counted). Once it is reached, SubmitKeyed of a key that has no pool runs
// its task on the catch-all pool, named bulkhead.CatchAllName and
// configured with catchAll, which all such keys share. Get and
// GetWithConfig of a new name fail with ErrRegistryFull instead. A key
// longer than the maximum key length (WithMaxKeyLength,
// bulkhead.DefaultMaxKeyLength by default) that has no pool runs on the
// catch-all too. max must be at least 1 and catchAll valid; NewRegistry
// fails otherwise.
func WithMaxPools(max int, catchAll Config) RegistryOption {
	return registryOptionFunc(func(r *Registry) {
		if max < 1 {
			r.setOptErr(fmt.Errorf("pool: NewRegistry: WithMaxPools: max must be at least 1, got %d", max))
			return
		}
		if err := catchAll.validateFor(bulkhead.CatchAllName); err != nil {
			r.setOptErr(err)
			return
		}
		r.max, r.catchAll = max, &catchAll
	})
}

// WithMaxKeyLength sets the length in bytes of the longest key SubmitKeyed
// creates a pool for in a registry with WithMaxPools (default
// bulkhead.DefaultMaxKeyLength): a longer key that has no pool runs on the
// catch-all, so long keys cannot grow the registry by their length. n must
// be at least 1, and the option needs WithMaxPools; NewRegistry fails
// otherwise.
func WithMaxKeyLength(n int) RegistryOption {
	return registryOptionFunc(func(r *Registry) {
		if n < 1 {
			r.setOptErr(fmt.Errorf("pool: NewRegistry: WithMaxKeyLength: length must be at least 1, got %d", n))
			return
		}
		r.maxKeyLen = n
	})
}

func (r *Registry) setOptErr(err error) {
	if r.optErr == nil {
		r.optErr = err
	}
}

func (r *Registry) initCatchAll() error {
	if r.catchAll == nil {
		if r.maxKeyLen != 0 {
			return errors.New("pool: NewRegistry: WithMaxKeyLength needs WithMaxPools (its catch-all runs the longer keys)")
		}
		return nil
	}
	if r.maxKeyLen == 0 {
		r.maxKeyLen = bulkhead.DefaultMaxKeyLength
	}
	p, err := New(bulkhead.CatchAllName, *r.catchAll, r.opts...)
	if err != nil {
		return err
	}
	r.cat.SetMax(r.max)
	r.cat.Lock()
	r.cat.SetCatchAllLocked(bulkhead.CatchAllName, p)
	r.cat.SetMaxNameLenLocked(r.maxKeyLen)
	r.cat.Unlock()
	return nil
}

// createLocked creates a pool, subscribes the MetricsSource listeners to it
// and arms the idle sweep. The catalog stores it. After Close it creates
// none.
func (r *Registry) createLocked(e *catalog.Entry[*Pool], cfg Config) (*Pool, error) {
	if r.closed {
		return nil, fmt.Errorf("pool %q: %w: the registry was closed", e.Name(), ErrClosed)
	}
	p, err := New(e.Name(), cfg, r.opts...)
	if err != nil {
		return nil, err
	}
	r.fan.AddedLocked(p)
	r.armSweepLocked()
	return p, nil
}

func (r *Registry) fullError(name string, err error) error {
	if errors.Is(err, catalog.ErrFull) {
		return fmt.Errorf("pool %q: %w: it holds %d pools (WithMaxPools)", name, ErrRegistryFull, r.max)
	}
	return err
}

var errEmptyKey = errors.New("pool: SubmitKeyed: key must not be empty")

// CallOptions are the options of one SubmitKeyed call, as
// bulkhead.CallOptions are of a keyed Semaphore call. The zero value asks
// for the registry's choices, and every field's zero value means "as the
// registry decides", so a field added later changes nothing for callers
// that do not set it. They are passed by value, at no allocation.
type CallOptions struct {
	// ConfigName names the configuration to create the key's pool from if
	// it has none (on first use or after an eviction); an existing pool is
	// used as it is. "" means the registry's defaults. A name that is not a
	// known configuration fails the call with an error naming it.
	ConfigName string
}

// SubmitKeyed submits fn to the pool of key in reg, as Submit does: the
// pool is created from its configuration (see CallOptions) on first use or
// after an eviction, or, once WithMaxPools is reached and key has no pool,
// the catch-all runs fn. The call counts as a user of its pool from the
// lookup until its Future is done (its outcome published, before the
// callbacks registered by the caller run), so a pool is never evicted, nor
// closed, while a task submitted this way is queued or running.
//
// An empty key, or a pool that cannot be created (an unknown configuration,
// or a registry closed by Close: an error matching ErrClosed), yields a
// Future already rejected with an error naming it. SubmitKeyed panics if
// ctx, reg or fn is nil, as Submit does.
func SubmitKeyed[T any](ctx context.Context, reg *Registry, key string, opts CallOptions, fn func(ctx context.Context) (T, error)) *Future[T] {
	if reg == nil {
		panic("pool: SubmitKeyed called with a nil *Registry")
	}
	if ctx == nil {
		panic("pool: SubmitKeyed called with a nil context")
	}
	if fn == nil {
		panic("pool: SubmitKeyed called with a nil func")
	}
	e, err := reg.enter(key, opts)
	if err != nil {
		f := &Future[T]{}
		f.job = f
		f.err = err
		f.decide(taskRejected)
		return f
	}
	f := Submit(ctx, e.Item(), fn)
	f.OnDone(func(T, error) { e.Leave() })
	return f
}

// enter returns the entry that runs key's task, with one more user.
func (r *Registry) enter(key string, opts CallOptions) (*catalog.Entry[*Pool], error) {
	if key == "" {
		return nil, errEmptyKey
	}
	return r.cat.EnterOrCatchAll(key, opts.ConfigName)
}

// RegistryStats are a pool registry's counts, for metrics.
type RegistryStats struct {
	// Pools is the number of live pools, the catch-all included.
	Pools int
	// Evictions is the number of pools evicted (and closed) as idle so far.
	Evictions uint64
	// CatchAllCalls is the number of SubmitKeyed calls sent to the
	// catch-all because the cap was reached and their key had no pool.
	CatchAllCalls uint64
}

// Stats returns the registry's counts. It takes no lock.
func (r *Registry) Stats() RegistryStats {
	return RegistryStats{Pools: r.cat.Live(), Evictions: r.cat.Evictions(), CatchAllCalls: r.cat.CatchAllCalls()}
}

func (r *Registry) armSweepLocked() {
	if r.idle <= 0 {
		return
	}
	r.createdSince = true
	if !r.sweepArmed {
		r.sweepArmed = true
		r.clock.AfterFunc(r.idle/2, r.sweep)
	}
}

// idleTicks: 2 sweep periods (idle/2 apart) = idle.
const idleTicks = 2

// sweep is the timer's callback: it evicts idle pools, closes them outside
// the lock, and re-arms itself while unpinned pools remain or were created
// meanwhile.
func (r *Registry) sweep() {
	var evicted []*Pool
	unpinned := r.cat.Sweep(idleTicks, busy, func(name string, p *Pool) {
		r.fan.EvictedLocked(name, p)
		evicted = append(evicted, p)
	})
	for _, p := range evicted {
		_ = p.Close(context.Background()) // idle: nothing to drain
	}
	r.cat.Lock()
	defer r.cat.Unlock()
	if unpinned > 0 || r.createdSince {
		r.createdSince = false
		r.clock.AfterFunc(r.idle/2, r.sweep)
		return
	}
	r.sweepArmed = false
}

// busy reports whether p has a task queued or a worker holding one. With
// no user of its entry that cannot be but for a worker still finishing the
// delivery of a done Future; such a pool is kept until the next sweep.
func busy(p *Pool) bool {
	m := p.Metrics()
	return m.ActiveWorkers != 0 || m.QueueDepth != 0
}
