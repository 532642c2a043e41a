package permit

import (
	"sync/atomic"

	bulkhead "github.com/rxbulkhead/bulkhead"
)

// Bits of Guard.state.
const (
	guardHeld     uint32 = 1 << iota // the guard owns a permit
	guardRan                         // the call delivered something
	guardReleased                    // the permit was given back
)

// Guard gives one permit back to its bulkhead exactly once.
//
// The permit is given back by the first of Release or Complete; every later
// call is a no-op. A Guard that holds no permit (the zero Guard, or one whose
// acquisition was never granted) ignores both. A Guard is safe for concurrent
// use; the state word is the only thing its methods share, and one CAS on it
// decides which caller gives the permit back.
//
// A Guard over a bulkhead.CallTimer (a Semaphore, an adaptive bulkhead)
// takes the call's start when it starts holding the permit and finishes
// with FinishCallStarted, so the CallFinished event carries the call's
// duration; start is written before the state store that shares the
// Guard and read by the winner of take's CAS.
type Guard struct {
	b     bulkhead.Bulkhead
	state atomic.Uint32
	start bulkhead.CallStart
}

// NewGuard returns a Guard that owns one permit already acquired from b.
func NewGuard(b bulkhead.Bulkhead) *Guard {
	g := &Guard{}
	g.hold(b)
	return g
}

// hold makes g own one permit of b. It must happen before g is shared.
func (g *Guard) hold(b bulkhead.Bulkhead) {
	g.b = b
	if t, ok := b.(bulkhead.CallTimer); ok {
		g.start = t.StartCall()
	}
	g.state.Store(guardHeld)
}

// finish gives the permit of a call that ran back, with its start if the
// Guard took one.
func (g *Guard) finish() {
	if g.start != (bulkhead.CallStart{}) {
		if t, ok := g.b.(bulkhead.CallTimer); ok {
			t.FinishCallStarted(g.start)
			return
		}
	}
	g.b.FinishCall()
}

// MarkRan records that the call delivered something (an element, a value):
// a later Release gives the permit back with FinishCall instead of
// ReleasePermission. It costs one atomic load once the mark is set.
func (g *Guard) MarkRan() {
	if g.state.Load()&guardRan == 0 {
		g.state.Or(guardRan)
	}
}

// Release gives the permit back if nobody did yet: with FinishCall if
// MarkRan was called before, with ReleasePermission otherwise (the call did
// not run). It reports whether this call gave the permit back.
func (g *Guard) Release() bool {
	s, ok := g.take()
	if !ok {
		return false
	}
	if s&guardRan != 0 {
		g.finish()
	} else {
		g.b.ReleasePermission()
	}
	return true
}

// Complete gives the permit back with FinishCall (the call ran to its end,
// successfully or not) if nobody did yet, and reports whether it did.
func (g *Guard) Complete() bool {
	if _, ok := g.take(); !ok {
		return false
	}
	g.finish()
	return true
}

// Released reports whether the permit was given back.
func (g *Guard) Released() bool { return g.state.Load()&guardReleased != 0 }

// take sets guardReleased if the guard holds a permit not yet given back.
// The CAS makes exactly one caller win; it returns the state it replaced.
func (g *Guard) take() (uint32, bool) {
	for {
		s := g.state.Load()
		if s&guardHeld == 0 || s&guardReleased != 0 {
			return s, false
		}
		if g.state.CompareAndSwap(s, s|guardReleased) {
			return s, true
		}
	}
}
