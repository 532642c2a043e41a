package adaptive_test

import (
	"testing"
	"time"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/adaptive"
	"github.com/rxbulkhead/bulkhead/testkit"
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// newBulkhead returns an adaptive Bulkhead over a fresh semaphore on a
// virtual clock, checked for leaked permits at the end of the test.
func newBulkhead(t *testing.T, semCfg bulkhead.Config, cfg adaptive.Config) (*adaptive.Bulkhead, *testkit.VirtualClock) {
	t.Helper()
	clock := testkit.NewVirtualClock(epoch)
	sem, err := bulkhead.New("partner", semCfg, bulkhead.WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	b, err := adaptive.New(sem, cfg, adaptive.WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	testkit.CheckPermits(t, b)
	return b, clock
}

// fixed is an Algorithm that records its samples and returns next.
type fixed struct {
	next    float64
	samples []adaptive.Sample
}

func (f *fixed) Update(_ float64, s adaptive.Sample) float64 {
	f.samples = append(f.samples, s)
	return f.next
}

// runTyped makes n calls of rtt each, k at a time, through TryAcquire.
func runTyped(t *testing.T, b *adaptive.Bulkhead, clock *testkit.VirtualClock, n, k int, rtt time.Duration) {
	t.Helper()
	for done := 0; done < n; done += k {
		var calls []adaptive.Call
		for range k {
			c, ok := b.TryAcquire()
			if !ok {
				t.Fatalf("TryAcquire refused with %d in flight", len(calls))
			}
			calls = append(calls, c)
		}
		clock.Advance(rtt)
		for _, c := range calls {
			c.Finish(nil)
		}
	}
}
