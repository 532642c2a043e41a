package bulkhead

import (
	"slices"
	"sync"

	"github.com/rxbulkhead/bulkhead/internal/catalog"
)

// Registry keeps one Semaphore per name (one per partner) and a set of named
// configurations to create them from. It is safe for concurrent use.
type Registry struct {
	opts []Option
	// cat's lock also guards listeners.
	cat       *catalog.Catalog[Config, *Semaphore]
	listeners []*registryListener
}

// registryListener is one Registry.OnEvent registration: the func and its
// subscription on every bulkhead, guarded by Registry.cat's lock.
type registryListener struct {
	f    func(Event)
	subs map[*Semaphore]func()
}

// RegistryOption configures a Registry.
type RegistryOption interface{ applyRegistry(*Registry) }

type registryOptionFunc func(*Registry)

func (f registryOptionFunc) applyRegistry(r *Registry) { f(r) }

// WithConfig adds a named configuration for BulkheadWithConfig.
func WithConfig(name string, cfg Config) RegistryOption {
	return registryOptionFunc(func(r *Registry) { r.cat.SetConfig(name, cfg) })
}

// WithSemaphoreOptions passes opts (such as WithClock) to every Semaphore the
// Registry creates.
func WithSemaphoreOptions(opts ...Option) RegistryOption {
	return registryOptionFunc(func(r *Registry) { r.opts = append(r.opts, opts...) })
}

// DefaultConfigName is the name under which a Registry keeps its defaults.
const DefaultConfigName = "default"

// NewRegistry returns a Registry whose bulkheads use defaults unless created
// with a named configuration. It validates defaults and every configuration
// given with WithConfig, and fails with a *ConfigError naming the first
// invalid one (Name is the configuration's name, DefaultConfigName for
// defaults), so that a bad configuration surfaces where it is given rather
// than at the first Get.
func NewRegistry(defaults Config, opts ...RegistryOption) (*Registry, error) {
	r := &Registry{cat: catalog.New[Config, *Semaphore]("config", DefaultConfigName, defaults)}
	for _, o := range opts {
		o.applyRegistry(r)
	}
	if err := r.cat.Configs(func(name string, cfg Config) error { return cfg.validateFor(name) }); err != nil {
		return nil, err
	}
	return r, nil
}

// Get returns the bulkhead named name, creating it with the default
// configuration if it does not exist yet.
func (r *Registry) Get(name string) (*Semaphore, error) {
	return r.GetWithConfig(name, DefaultConfigName)
}

// GetWithConfig returns the bulkhead named name, creating it with the
// configuration named configName if it does not exist yet. An existing
// bulkhead is returned as it is, whatever configName says. It fails if
// configName is unknown or its configuration is invalid.
func (r *Registry) GetWithConfig(name, configName string) (*Semaphore, error) {
	return r.cat.GetOrCreate(name, configName, r.createLocked)
}

// createLocked creates and registers a bulkhead, subscribing the registry's
// listeners before anyone else can see it, so they miss none of its events.
func (r *Registry) createLocked(name string, cfg Config) (*Semaphore, error) {
	s, err := New(name, cfg, r.opts...)
	if err != nil {
		return nil, err
	}
	for _, l := range r.listeners {
		l.subs[s] = s.OnEvent(l.f)
	}
	r.cat.PutLocked(name, s)
	return s, nil
}

// Configure returns the bulkhead named name with configuration cfg: it
// creates it with cfg if it does not exist, and otherwise applies cfg with
// ChangeConfig. Nobody can observe a new bulkhead with another
// configuration first. It fails with a *ConfigError if cfg is invalid, and
// then changes nothing.
func (r *Registry) Configure(name string, cfg Config) (*Semaphore, error) {
	r.cat.Lock()
	s, ok := r.cat.FindLocked(name)
	if !ok {
		defer r.cat.Unlock()
		return r.createLocked(name, cfg)
	}
	r.cat.Unlock()
	if s.Config() == cfg {
		return s, nil
	}
	if err := s.ChangeConfig(cfg); err != nil {
		return nil, err
	}
	return s, nil
}

// OnEvent registers f on every bulkhead of the registry, present and future
// (a bulkhead created later is subscribed before it is returned to anyone),
// and returns a func that unregisters it everywhere (idempotent). Removing a
// bulkhead from the registry unsubscribes f from it. f runs as described at
// Semaphore.OnEvent. OnEvent panics if f is nil.
func (r *Registry) OnEvent(f func(Event)) (remove func()) {
	if f == nil {
		panic("bulkhead: Registry.OnEvent called with a nil listener")
	}
	l := &registryListener{f: f, subs: map[*Semaphore]func(){}}
	r.cat.Lock()
	for _, s := range r.cat.ItemsLocked() {
		l.subs[s] = s.OnEvent(f)
	}
	r.listeners = append(r.listeners, l)
	r.cat.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			r.cat.Lock()
			r.listeners = slices.DeleteFunc(r.listeners, func(x *registryListener) bool { return x == l })
			subs := l.subs
			l.subs = nil
			r.cat.Unlock()
			for _, unsubscribe := range subs {
				unsubscribe()
			}
		})
	}
}

// AddConfig adds or replaces a named configuration after validating it.
// Bulkheads already created from it keep their configuration; use
// Semaphore.ChangeConfig to change them.
func (r *Registry) AddConfig(name string, cfg Config) error {
	if err := cfg.validateFor(name); err != nil {
		return err
	}
	r.cat.SetConfig(name, cfg)
	return nil
}

// Find returns the bulkhead named name if it exists.
func (r *Registry) Find(name string) (*Semaphore, bool) {
	return r.cat.Find(name)
}

// All returns every bulkhead, sorted by name.
func (r *Registry) All() []*Semaphore {
	return r.cat.All()
}

// Remove forgets the bulkhead named name and reports whether it existed.
// Holders of the removed *Semaphore may go on using it; the registry's
// listeners (OnEvent) no longer receive its events.
func (r *Registry) Remove(name string) bool {
	r.cat.Lock()
	defer r.cat.Unlock()
	s, ok := r.cat.RemoveLocked(name)
	if !ok {
		return false
	}
	for _, l := range r.listeners {
		if unsubscribe, ok := l.subs[s]; ok {
			delete(l.subs, s)
			unsubscribe()
		}
	}
	return true
}
