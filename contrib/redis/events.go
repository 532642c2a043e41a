package redis

import (
	"sync"
	"sync/atomic"

	"github.com/rxbulkhead/bulkhead"
)

// publisher holds the listeners of one bulkhead as a copy-on-write slice:
// publishing reads one atomic pointer, and costs nothing without listeners.
type publisher struct {
	mu        sync.Mutex // serialises add and remove
	listeners atomic.Pointer[[]*listener]
}

type listener struct{ f func(bulkhead.Event) }

func (p *publisher) active() bool { return p.listeners.Load() != nil }

func (p *publisher) add(f func(bulkhead.Event)) (remove func()) {
	if f == nil {
		panic("redis: OnEvent called with a nil listener")
	}
	l := &listener{f: f}
	p.mu.Lock()
	var next []*listener
	if cur := p.listeners.Load(); cur != nil {
		next = append(next, *cur...)
	}
	next = append(next, l)
	p.listeners.Store(&next)
	p.mu.Unlock()
	var once sync.Once
	return func() { once.Do(func() { p.remove(l) }) }
}

func (p *publisher) remove(l *listener) {
	p.mu.Lock()
	defer p.mu.Unlock()
	cur := p.listeners.Load()
	if cur == nil {
		return
	}
	var next []*listener
	for _, x := range *cur {
		if x != l {
			next = append(next, x)
		}
	}
	if len(next) == 0 {
		p.listeners.Store(nil)
		return
	}
	p.listeners.Store(&next)
}

// publish calls every listener on the calling goroutine; a panicking
// listener is recovered and skipped.
func (p *publisher) publish(e bulkhead.Event) {
	ls := p.listeners.Load()
	if ls == nil {
		return
	}
	for _, l := range *ls {
		func() {
			defer func() { _ = recover() }()
			l.f(e)
		}()
	}
}
