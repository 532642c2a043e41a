// Package outcome is the one-shot outcome cell shared by bulkhead.Acquisition
// and pool.Future: a state word that its owner moves by compare-and-swap
// until the outcome is decided, a Done channel closed when the outcome is
// published, the list of callbacks registered before that, and two runners
// for that list that differ only in what a panicking callback does.
//
// The protocol:
//   - the owner decides the outcome with one CompareAndSwap on the state
//     word (only the winner goes on) and writes the outcome's data;
//   - the winner calls PublishLocked under Lock (or Publish): from then on
//     Done is closed, Published is set, Register refuses new callbacks (the
//     caller runs them at once) and the list is frozen;
//   - the winner takes the list with Take, outside the lock, and runs it
//     with the runner of its panic policy: RunRecover (the pool: every
//     panic is recovered and handed back) or RunHandOff (the Acquisition:
//     the panic goes on, the callbacks after it run on a fresh goroutine).
//
// So Done and the state word reflect the outcome before any callback runs,
// a callback that blocks delays no other cell, and each registered callback
// runs exactly once.
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

// Cell is the state word, the lock, the Done channel and the callback list
// of one operation; CB is the owner's callback type. The zero Cell has state
// 0, is not published and has no callbacks.
//
// Invariants:
//   - Published, once set, is never cleared (except by Reset, on a cell
//     nobody else holds);
//   - done, has, first and more are guarded by mu until Published is set;
//     afterwards done is closed (if it was made) and the list belongs to the
//     goroutine that published, which takes it once (Take);
//   - has says first holds a callback; more holds the ones after it, in
//     registration order.
//
// The field order keeps has in the padding after mu, so that a Cell of a
// func type is 40 bytes on 64-bit platforms (the sizes of a queued
// Acquisition and a queued pool task depend on it).
type Cell[CB any] struct {
	state atomic.Uint32
	mu    sync.Mutex
	has   bool          // first holds a callback
	done  chan struct{} // created lazily by Done, or set by Reset
	first CB
	more  *[]CB
}

// closed is returned by Done for cells published before Done was called, so
// that they need no channel of their own.
var closed = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// Load returns the state word.
func (c *Cell[CB]) Load() uint32 { return c.state.Load() }

// Store sets the state word without the lock and without closing Done. It
// is for a cell not yet shared, and for an owner that never hands out Done
// nor registers callbacks and wakes its one waiter itself (a pooled
// blocking waiter: see Reset and Chan).
func (c *Cell[CB]) Store(s uint32) { c.state.Store(s) }

// CompareAndSwap is the owner's decision: it moves the state from old to
// new if it is still old.
func (c *Cell[CB]) CompareAndSwap(old, new uint32) bool { return c.state.CompareAndSwap(old, new) }

// IsPublished reports whether the outcome is published.
func (c *Cell[CB]) IsPublished() bool { return c.state.Load()&Published != 0 }

// Lock locks the cell.
func (c *Cell[CB]) Lock() { c.mu.Lock() }

// Unlock unlocks the cell.
func (c *Cell[CB]) Unlock() { c.mu.Unlock() }

// Done returns a channel that is closed once the outcome is published.
func (c *Cell[CB]) Done() <-chan struct{} {
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
func (c *Cell[CB]) PublishLocked(s uint32) {
	c.state.Store(s | Published)
	if c.done != nil {
		close(c.done)
	}
}

// Publish publishes the state the decision left in the state word, under
// the lock, unless it is published already; it reports whether it did. It
// takes no lock but the cell's, so an owner may call it under its own. It is
// idempotent, for owners where more than one goroutine may make the same
// decided outcome visible (the Semaphore's grant loop and the Cancel that
// won the CAS).
func (c *Cell[CB]) Publish() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.state.Load()
	if s&Published != 0 {
		return false
	}
	c.PublishLocked(s)
	return true
}

// Register keeps cb to be run by the publisher and reports true, or, if the
// outcome is already published, keeps nothing and reports false: the caller
// then runs cb itself, at once.
func (c *Cell[CB]) Register(cb CB) bool {
	if c.IsPublished() {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.IsPublished():
		return false
	case !c.has:
		c.first, c.has = cb, true
	case c.more == nil:
		c.more = &[]CB{cb}
	default:
		*c.more = append(*c.more, cb)
	}
	return true
}

// HasCallbacks reports whether a callback was registered. Only the
// goroutine that published may call it (the list is frozen then).
func (c *Cell[CB]) HasCallbacks() bool { return c.has }

// Take hands the callbacks registered before publication to the goroutine
// that published, which calls it once, after publishing: first and then
// rest, in registration order; ok is false if there are none. The cell
// keeps no reference to them.
func (c *Cell[CB]) Take() (first CB, rest []CB, ok bool) {
	if !c.has {
		return first, nil, false
	}
	first, ok = c.first, true
	if c.more != nil {
		rest = *c.more
	}
	var zero CB
	c.first, c.more, c.has = zero, nil, false
	return first, rest, ok
}

// Reset makes c a fresh cell (state 0, not published, no callbacks) whose
// channel is done (nil: made lazily by Done). It is for an owner that reuses
// a cell nobody else holds any more.
func (c *Cell[CB]) Reset(done chan struct{}) {
	var zero CB
	c.state.Store(0)
	c.done, c.first, c.more, c.has = done, zero, nil, false
}

// Chan returns the channel set by Reset or made by Done, whatever the
// state. It is for an owner that wakes its one waiter by a send on that
// channel instead of publishing (PublishLocked would close it).
func (c *Cell[CB]) Chan() chan struct{} { return c.done }

// Panic is a panic recovered from a callback: the value passed to panic and
// the stack of the goroutine at that point.
type Panic struct {
	Value any
	Stack []byte
}

// RunRecover is the runner of an owner whose callbacks must not take down
// the goroutine that runs them (a pool worker): it calls call(cb) for first
// and then every cb of rest, in order, on the calling goroutine. A callback
// that panics does not stop the ones after it: each runs exactly once.
// RunRecover returns the panics in the order they happened (nil if none);
// what to do with them is the caller's decision.
func RunRecover[CB any](first CB, rest []CB, call func(CB)) []*Panic {
	var panics []*Panic
	if p := runOne(first, call); p != nil {
		panics = append(panics, p)
	}
	for _, cb := range rest {
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

// RunHandOff is the runner of an owner whose callbacks' panics are the
// program's (an Acquisition): it calls first(arg) and then every cb of rest
// with arg, in order, on the calling goroutine, and recovers nothing. If
// one panics, the ones after it are handed to a fresh goroutine (which runs
// them the same way), and the panic goes on, on the calling goroutine, once
// that goroutine has started. So each callback runs exactly once and none
// waits for a panic to be handled.
func RunHandOff[A any](arg A, first func(A), rest []func(A)) {
	next := -1 // index in rest of the callback running now (-1: first)
	defer func() {
		if next < len(rest) { // a callback panicked: run the others elsewhere
			if after := rest[next+1:]; len(after) > 0 {
				var started sync.WaitGroup
				started.Add(1)
				go func() {
					started.Done()
					RunHandOff(arg, after[0], after[1:])
				}()
				started.Wait()
			}
		}
	}()
	first(arg)
	for next = 0; next < len(rest); next++ {
		rest[next](arg)
	}
}
