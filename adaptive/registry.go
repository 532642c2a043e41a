package adaptive

import (
	"errors"
	"maps"
	"slices"
	"sync"

	"github.com/rxbulkhead/bulkhead"
)

// Registry gives every bulkhead of a *bulkhead.Registry its own adaptive
// limit: Get returns the adaptive Bulkhead of a partner, created on first
// use over reg.Get(name), with its own Algorithm (Config.Algorithm is called
// once per partner), so each partner adapts on its own. It is safe for
// concurrent use.
//
// A semaphore removed from reg and created again gets a new Bulkhead on the
// next Get; the old one keeps working on the old semaphore.
type Registry struct {
	reg  *bulkhead.Registry
	cfg  Config
	opts []Option

	mu    sync.Mutex
	items map[string]*Bulkhead

	watched        bool   // set by WatchRegistry before any event
	stop           func() // unsubscribes the registry listener (WatchRegistry)
	onlyConfigured bool   // OnlyConfigured: controllers only through Configure
}

// ErrNotAdaptive is returned by Registry.Get, under OnlyConfigured, for a
// partner that was given no adaptive config.
var ErrNotAdaptive = errors.New("adaptive: partner has no adaptive config")

// NewRegistry returns a Registry over reg whose bulkheads use cfg and opts
// (give it the clock of reg's semaphores with WithClock). It fails with a
// *ConfigError if cfg is invalid, with an error naming a nil option or
// WithClock(nil), and panics if reg is nil.
func NewRegistry(reg *bulkhead.Registry, cfg Config, opts ...Option) (*Registry, error) {
	if reg == nil {
		panic("adaptive: NewRegistry called with a nil *bulkhead.Registry")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	o, err := newOptions("adaptive: NewRegistry", opts)
	if err != nil {
		return nil, err
	}
	return &Registry{reg: reg, cfg: cfg, opts: opts, items: map[string]*Bulkhead{}, onlyConfigured: o.onlyConfigured}, nil
}

// Get returns the adaptive Bulkhead of the partner called name, creating the
// semaphore (reg.Get) and its controller on first use. It fails as
// bulkhead.Registry.Get does, and with ErrNotAdaptive under OnlyConfigured
// for a partner not given a config with Configure.
func (r *Registry) Get(name string) (*Bulkhead, error) {
	sem, err := r.reg.Get(name)
	if err != nil {
		return nil, err
	}
	b, _, err := r.getFor(sem)
	return b, err
}

// Find returns the adaptive Bulkhead called name if Get created it.
func (r *Registry) Find(name string) (*Bulkhead, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	b, ok := r.items[name]
	return b, ok
}

// All returns the adaptive Bulkheads created so far, sorted by name.
func (r *Registry) All() []*Bulkhead {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]*Bulkhead, 0, len(r.items))
	for _, name := range slices.Sorted(maps.Keys(r.items)) {
		out = append(out, r.items[name])
	}
	return out
}

// Semaphores returns the underlying registry.
func (r *Registry) Semaphores() *bulkhead.Registry { return r.reg }

// Configure gives the partner called name its own adaptive configuration:
// it creates the semaphore if needed (reg.Get) and a new controller with
// cfg, which replaces the partner's previous controller (the new one starts
// from the semaphore's current limit, unless cfg.Initial says otherwise).
// Later Gets, and the events of a WatchRegistry, go to the new controller;
// whoever still holds the old one should let go of it, since both would
// set the semaphore's limit. It fails with a *ConfigError if cfg is
// invalid (Config.Algorithm included: one that makes no algorithm),
// changing nothing. Meant for configuring partners at start-up,
// from a configuration file for instance.
func (r *Registry) Configure(name string, cfg Config) (*Bulkhead, error) {
	// Everything is checked, and the algorithm made, before the semaphore
	// is created.
	p, err := prepare(name, cfg, r.opts)
	if err != nil {
		return nil, err
	}
	sem, err := r.reg.Get(name)
	if err != nil {
		return nil, err
	}
	b := p.build(sem)
	if r.watched {
		b.watchFrom()
	}
	r.mu.Lock()
	r.items[name] = b
	r.mu.Unlock()
	b.apply()
	return b, nil
}
