package testkit_test

import (
	"testing"
	"time"

	"github.com/rxbulkhead/bulkhead/testkit"
)

// Promise (VirtualClock.Advance, AdvanceTo): "virtual time never goes
// back". A refused move back (a negative Advance, an AdvanceTo before Now,
// due timers pending) changes nothing: Now stays, no timer fires, and the
// pending ones fire at the next forward move, in order. A timer func that
// advances the clock past the outer advance's target leaves Now there when
// the outer advance returns; a timer of d <= 0 scheduled then is due at
// that later Now, past the outer target, so it waits for the next advance
// ("fires at the next Advance or AdvanceTo (Advance(0) will do)").
func TestHostileTimeNeverGoesBack(t *testing.T) {
	c := testkit.NewVirtualClock(start)
	c.Advance(time.Minute)
	var fired []string
	c.AfterFunc(0, func() { fired = append(fired, "zero") })
	c.AfterFunc(-time.Hour, func() { fired = append(fired, "negative") })
	for _, back := range []func(){func() { c.Advance(-time.Nanosecond) }, func() { c.AdvanceTo(start) }} {
		func() {
			defer func() { _ = recover() }()
			back()
		}()
	}
	if !c.Now().Equal(start.Add(time.Minute)) || len(fired) != 0 || c.PendingTimers() != 2 {
		t.Fatalf("after refused moves back: Now = start+%v, fired %q, %d pending; want start+1m, none, 2",
			c.Since(start), fired, c.PendingTimers())
	}
	c.Advance(0)
	if want := []string{"zero", "negative"}; len(fired) != 2 || fired[0] != want[0] || fired[1] != want[1] {
		t.Fatalf("Advance(0) fired %q, want %q (scheduling order, both due at Now)", fired, want)
	}

	fired = nil
	var nowInLate time.Time
	c.AfterFunc(time.Second, func() {
		c.Advance(time.Hour) // far past the outer target
		c.AfterFunc(0, func() { nowInLate = c.Now() })
	})
	outer := c.Now().Add(2 * time.Second)
	c.AdvanceTo(outer)
	if want := outer.Add(-time.Second).Add(time.Hour); !c.Now().Equal(want) {
		t.Fatalf("after the outer advance Now = start+%v, want start+%v (time went back)", c.Since(start), want.Sub(start))
	}
	if !nowInLate.IsZero() || c.PendingTimers() != 1 {
		t.Fatalf("the d=0 timer due past the outer target fired within it (Now %v) or is not pending (%d)", nowInLate, c.PendingTimers())
	}
	c.Advance(0)
	if !nowInLate.Equal(c.Now()) {
		t.Fatalf("the d=0 timer scheduled at start+%v fired with Now = start+%v", c.Since(start), nowInLate.Sub(start))
	}
}
