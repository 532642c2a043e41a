// Package outcome is the one-shot outcome cell of an asynchronous
// operation (a pool.Future; designed so that bulkhead.Acquisition can use
// it too): a state word that its owner moves by compare-and-swap until the
// outcome is decided, a Done channel closed when the outcome is published,
// and a panic-safe way to run the callbacks registered before that.
//
// The protocol, for an owner with a callback list guarded by the cell's
// lock:
//   - the owner decides the outcome with one CompareAndSwap on the state
//     word (only the winner goes on) and writes the outcome's data;
//   - the winner calls PublishLocked under Lock and takes the callback list
//     in the same critical section: from then on Done is closed, Published
//     is set, and a callback registered later runs at once on its caller;
//   - the winner runs the taken callbacks with Run, outside the lock.
//
// So Done and the state word reflect the outcome before any callback runs,
// and a callback that blocks delays no other cell.
package outcome

import (
	"runtime/debug"
	"sync"
	"sync/atomic"
)

const (
	// Mask selects the owner's state (decided or not) in the state word.
	Mask uint32 = 0xff
	// Published is set in the state word once the outcome is published.
	Published uint32 = 1 << 8
)

// Cell is the state word, the lock and the Done channel of one operation.
// The zero Cell has state 0 and is not published.
type Cell struct {
	state atomic.Uint32
	mu    sync.Mutex    // guards done and whatever the owner keeps with it (callbacks)
	done  chan struct{} // created lazily by Done
}

// closed is returned by Done for cells published before Done was called, so
// that they need no channel of their own.
var closed = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// Load returns the state word.
func (c *Cell) Load() uint32 { return c.state.Load() }

// Store sets the state word; only for a cell not yet shared.
func (c *Cell) Store(s uint32) { c.state.Store(s) }

// CompareAndSwap is the owner's decision: it moves the state from old to
// new if it is still old.
func (c *Cell) CompareAndSwap(old, new uint32) bool { return c.state.CompareAndSwap(old, new) }

// IsPublished reports whether the outcome is published.
func (c *Cell) IsPublished() bool { return c.state.Load()&Published != 0 }

// Lock locks the cell.
func (c *Cell) Lock() { c.mu.Lock() }

// Unlock unlocks the cell.
func (c *Cell) Unlock() { c.mu.Unlock() }

// Done returns a channel that is closed once the outcome is published.
func (c *Cell) Done() <-chan struct{} {
	if c.IsPublished() {
		return closed
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.IsPublished() {
		return closed
	}
	if c.done == nil {
		c.done = make(chan struct{})
	}
	return c.done
}

// PublishLocked stores the decided state s with Published set and closes
// Done. The caller holds Lock and is the goroutine that decided the
// outcome; it calls PublishLocked once.
func (c *Cell) PublishLocked(s uint32) {
	c.state.Store(s | Published)
	if c.done != nil {
		close(c.done)
	}
}

// Panic is a panic recovered from a callback: the value passed to panic and
// the stack of the goroutine at that point.
type Panic struct {
	Value any
	Stack []byte
}

// Run calls call(cb) for every cb in order, on the calling goroutine. A
// callback that panics does not stop the ones after it: each runs exactly
// once. Run returns the panics in the order they happened (nil if none);
// what to do with them is the caller's decision.
func Run[CB any](cbs []CB, call func(CB)) []*Panic {
	var panics []*Panic
	for _, cb := range cbs {
		if p := runOne(cb, call); p != nil {
			panics = append(panics, p)
		}
	}
	return panics
}

func runOne[CB any](cb CB, call func(CB)) (p *Panic) {
	defer func() {
		if v := recover(); v != nil {
			p = &Panic{Value: v, Stack: debug.Stack()}
		}
	}()
	call(cb)
	return nil
}
