package permit

import (
	"sync"
	"testing"

	bulkhead "github.com/rxbulkhead/bulkhead"
)

func TestGuardReleaseWithoutRunGivesPermitBackUnused(t *testing.T) {
	s := newSemaphore(t, bulkhead.Config{MaxConcurrentCalls: 1})
	events := recordEvents(s)
	if !s.TryAcquirePermission() {
		t.Fatal("no permit")
	}
	g := NewGuard(s)
	if !g.Release() {
		t.Fatal("first Release reported no release")
	}
	if got := count(events(), bulkhead.CallFinished); got != 0 {
		t.Fatalf("CallFinished events = %d, want 0 (ReleasePermission)", got)
	}
	if s.Metrics().InFlightCalls != 0 {
		t.Fatal("permit still held")
	}
}

func TestGuardReleaseAfterMarkRanCompletes(t *testing.T) {
	s := newSemaphore(t, bulkhead.Config{MaxConcurrentCalls: 1})
	events := recordEvents(s)
	s.TryAcquirePermission()
	g := NewGuard(s)
	g.MarkRan()
	g.MarkRan()
	g.Release()
	if got := count(events(), bulkhead.CallFinished); got != 1 {
		t.Fatalf("CallFinished events = %d, want 1", got)
	}
}

func TestGuardGivesPermitBackOnlyOnce(t *testing.T) {
	s := newSemaphore(t, bulkhead.Config{MaxConcurrentCalls: 2})
	events := recordEvents(s)
	s.TryAcquirePermission()
	s.TryAcquirePermission()
	g := NewGuard(s)
	if !g.Complete() {
		t.Fatal("Complete did not release")
	}
	if g.Release() || g.Complete() {
		t.Fatal("second release reported success")
	}
	if !g.Released() {
		t.Fatal("Released() = false after Complete")
	}
	// Exactly one of the two permits came back (a double release would
	// have returned both).
	if got := s.Metrics().InFlightCalls; got != 1 {
		t.Fatalf("in flight = %d, want 1", got)
	}
	if got := count(events(), bulkhead.CallFinished); got != 1 {
		t.Fatalf("CallFinished events = %d, want 1", got)
	}
	s.ReleasePermission()
}

func TestZeroGuardHoldsNothing(t *testing.T) {
	var g Guard
	g.MarkRan()
	if g.Release() || g.Complete() || g.Released() {
		t.Fatal("zero Guard released a permit")
	}
}

func TestGuardConcurrentReleasesGiveBackExactlyOnce(t *testing.T) {
	s := newSemaphore(t, bulkhead.Config{MaxConcurrentCalls: 1})
	for range 2000 {
		if !s.TryAcquirePermission() {
			t.Fatal("permit leaked by a previous iteration")
		}
		g := NewGuard(s)
		var wg sync.WaitGroup
		var wins [3]bool
		wg.Add(3)
		go func() { defer wg.Done(); wins[0] = g.Release() }()
		go func() { defer wg.Done(); wins[1] = g.Complete() }()
		go func() { defer wg.Done(); g.MarkRan(); wins[2] = g.Release() }()
		wg.Wait()
		n := 0
		for _, w := range wins {
			if w {
				n++
			}
		}
		if n != 1 {
			t.Fatalf("%d releases won, want 1", n)
		}
	}
}
