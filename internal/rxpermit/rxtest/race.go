package rxtest

import (
	"context"
	"runtime"
	"sync"
	"testing"

	"github.com/reactivex/rxgo/v2"

	bulkhead "github.com/rxbulkhead/bulkhead"
)

// GrantRacingCancel is the stress test of every operator: obs runs a source
// under b, a 1-permit bulkhead with a long wait, and each of iterations
// rounds takes b's permit, observes obs (so that the observation queues,
// most rounds), then gives the permit back on one goroutine while the
// observation's context is cancelled on another. Whichever wins, the permit
// must come back exactly once (a second release panics in the Semaphore)
// and nothing may stay queued; values the observation forwards must be want.
//
// It uses real goroutines, not a synctest bubble: the race is the point.
func GrantRacingCancel(t testing.TB, b *bulkhead.Semaphore, obs rxgo.Iterable, want any, iterations int) {
	t.Helper()
	for i := range iterations {
		if !b.TryAcquirePermission() {
			t.Fatalf("iteration %d: the permit is still held", i)
		}
		ctx, cancel := context.WithCancel(t.Context())
		ch := obs.Observe(rxgo.WithContext(ctx))
		// Let the observation queue most of the time, not always.
		for j := 0; i%4 != 0 && j < 100 && b.Metrics().QueuedCalls == 0; j++ {
			runtime.Gosched()
		}
		var wg sync.WaitGroup
		wg.Go(b.ReleasePermission)
		wg.Go(cancel)
		items := Drain(ch) // closes only after the permit's fate is settled
		wg.Wait()
		for _, it := range items {
			if it.E != nil || it.V != want {
				t.Fatalf("iteration %d: got item %+v, want value %v", i, it, want)
			}
		}
		if m := b.Metrics(); m.InFlightCalls != 0 || m.QueuedCalls != 0 {
			t.Fatalf("iteration %d: %d permit(s) held, %d call(s) queued after the race", i, m.InFlightCalls, m.QueuedCalls)
		}
	}
}
