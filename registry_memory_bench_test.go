package bulkhead_test

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/callcount"
	"github.com/rxbulkhead/bulkhead/testkit"
)

// BenchmarkRegistryKeyFlood measures, through the public API and after GC,
// the heap of a registry (with a callcount.Counter, as the metrics
// exporters attach) while a flood of distinct keys, each making one call,
// grows from 1,000 to 1,000,000, interleaved with steady traffic from 20
// legitimate keys. The registry caps its bulkheads at floodCap and evicts
// them after an idle second of virtual time; the flood sends 50,000 keys per
// virtual second. It fails if a legitimate key is ever rejected or sent to
// the catch-all. The keys are 15 bytes long; keylen=8192 floods 8 KB keys,
// which the registry sends to the catch-all (WithMaxKeyLength), so they
// hold no more than short ones. Not part of `make test`:
//
//	go test -run '^$' -bench BenchmarkRegistryKeyFlood -benchtime 1x .
func BenchmarkRegistryKeyFlood(b *testing.B) {
	for _, keys := range []int{1_000, 10_000, 100_000, 1_000_000} {
		b.Run(fmt.Sprint("keys=", keys), func(b *testing.B) {
			for b.Loop() {
				keyFlood(b, keys, 0)
			}
		})
	}
	b.Run("keys=100000/keylen=8192", func(b *testing.B) {
		for b.Loop() {
			keyFlood(b, 100_000, 8192)
		}
	})
}

const (
	floodCap      = 20_000
	floodPerTick  = 5_000 // flood keys per 100 ms of virtual time: more than the cap per idle second
	floodLegit    = 20
	floodLegitCfg = 4
)

func keyFlood(b *testing.B, keys, keyLen int) {
	pad := strings.Repeat("x", max(keyLen-len("attacker-0000000"), 0))
	clock := testkit.NewVirtualClock(epoch)
	before := heapInUse()
	r, err := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: floodLegitCfg},
		bulkhead.WithSemaphoreOptions(bulkhead.WithClock(clock)),
		bulkhead.WithIdleTimeout(time.Second),
		bulkhead.WithMaxBulkheads(floodCap, bulkhead.Config{MaxConcurrentCalls: 8}))
	if err != nil {
		b.Fatal(err)
	}
	counter := callcount.New(r)
	defer counter.Close()
	legit := make([]string, floodLegit)
	for i := range legit {
		legit[i] = fmt.Sprintf("partner-%02d", i)
	}
	steady := func() {
		for _, k := range legit {
			a, l := r.AcquirePermissionAsync(k, bulkhead.CallOptions{})
			if a.Err() != nil || l.Name() != k {
				b.Fatalf("legitimate key %s: %v (admitted by %q) during the flood", k, a.Err(), l.Name())
			}
			l.FinishCall()
		}
	}
	steady()
	for i := range keys {
		a, l := r.AcquirePermissionAsync(fmt.Sprintf("attacker-%07d%s", i, pad), bulkhead.CallOptions{})
		if a.Err() == nil {
			l.FinishCall()
		}
		if (i+1)%floodPerTick == 0 {
			clock.Advance(100 * time.Millisecond)
			steady()
		}
	}
	after := heapInUse()
	st := r.Stats()
	b.ReportMetric(float64(after-before)/(1<<20), "MiB")
	b.ReportMetric(float64(after-before)/float64(st.Bulkheads), "B/live-bulkhead")
	b.ReportMetric(float64(st.Bulkheads), "live")
	b.ReportMetric(float64(st.Evictions), "evicted")
	b.ReportMetric(float64(st.CatchAllCalls), "catch-all-calls")
	runtime.KeepAlive(r)
}
