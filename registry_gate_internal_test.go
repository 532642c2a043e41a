package bulkhead

import (
	"testing"
	"testing/synctest"
	"time"
)

// TestGatePassesEventsOfALiveBulkheadOnlyFromBeforeItsEviction: the
// registry's listeners are subscribed through gate, which must drop the
// events of a keyed call that reached a bulkhead after the sweep evicted it
// (such a call undoes its acquire and goes to the key's new bulkhead; a
// listener that saw it would count a call that never ran there, or bring
// back the metric series OnEvict just forgot).
func TestGatePassesEventsOfALiveBulkheadOnlyFromBeforeItsEviction(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, err := NewRegistry(Config{MaxConcurrentCalls: 1}, WithIdleTimeout(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		l, err := r.TryAcquirePermission("k", CallOptions{})
		if err != nil {
			t.Fatal(err)
		}
		l.FinishCall()
		e := r.cat.Lookup("k")
		seen := 0
		gated := r.gate(e, func(Event) { seen++ })
		gated(Event{Type: CallPermitted, Name: "k"})
		if seen != 1 {
			t.Fatal("the gate dropped an event of a live bulkhead")
		}
		time.Sleep(2 * time.Second) // idle: the sweep evicts k
		synctest.Wait()
		if r.cat.Lookup("k") != nil || r.cat.Kept(e) {
			t.Fatal("k was not evicted")
		}
		// A late keyed call: it looked k up before the eviction and acquires
		// after it. Its events must not pass.
		if !e.Item().TryAcquirePermission() {
			t.Fatal("the evicted bulkhead had no permit")
		}
		gated(Event{Type: CallPermitted, Name: "k"})
		e.Item().ReleasePermission()
		if seen != 1 {
			t.Fatal("the gate passed an event of a call that reached the evicted bulkhead")
		}
	})
}
