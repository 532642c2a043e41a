package adaptive_test

import (
	"context"
	"encoding/binary"
	"testing"
	"time"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/adaptive"
	"github.com/rxbulkhead/bulkhead/testkit"
)

// fuzzMaxLimit bounds the ceiling so that one fuzz input stays fast.
const fuzzMaxLimit = 64

// recoveryBudget is how many healthy windows a limit at the floor may take
// to rise again. Capacity's no-load RTT climbs by at most 1 % per window, so
// coming back from a 1 ns no-load RTT to 100 ms takes about 1850 windows.
const recoveryBudget = 4000

// FuzzAlgorithms drives every built-in algorithm through the real
// controller (one call per window), with arbitrary samples: up to 64 of
// them, RTTs from 0 to 2^56 ns (2.3 years; the controller's clock offsets
// are time.Durations since its creation, good for 292 years), in-flight
// counts up to the ceiling, drops. Then the
// partner recovers (100 ms, every permit in use, no drop). It checks that
// nothing panics, that the applied limit always stays in [Min, Max], and
// that a limit at the floor rises again within recoveryBudget windows.
func FuzzAlgorithms(f *testing.F) {
	f.Add(uint8(0), uint8(1), uint8(20), []byte{0, 0, 0, 0, 0, 0, 0, 1, 3, 0})
	f.Add(uint8(1), uint8(5), uint8(40), []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 40, 1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0})
	f.Add(uint8(2), uint8(1), uint8(64), []byte{1, 0, 0, 0, 0, 0, 0, 0, 64, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0, 64, 1})
	f.Add(uint8(3), uint8(2), uint8(10), []byte{1, 0, 0, 0, 0, 0, 0, 0, 10, 0})
	f.Add(uint8(4), uint8(1), uint8(40), []byte{0, 0, 0, 0, 0, 0, 0, 1, 40, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0, 40, 1})
	f.Fuzz(fuzzAlgorithm)
}

// fuzzAlgorithm is FuzzAlgorithms' target: the algorithm names()[alg],
// Min and Max from lo and hi, the samples from data.
func fuzzAlgorithm(t *testing.T, alg, lo, hi uint8, data []byte) {
	names := adaptive.Names()
	newAlg, _ := adaptive.ByName(names[int(alg)%len(names)])
	minL := 1 + int(lo)%fuzzMaxLimit
	maxL := minL + int(hi)%(fuzzMaxLimit-minL+1)
	clock := testkit.NewVirtualClock(epoch)
	sem, err := bulkhead.New("fuzzed", bulkhead.Config{MaxConcurrentCalls: maxL}, bulkhead.WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	b, err := adaptive.New(sem, adaptive.Config{
		Algorithm: newAlg, Min: minL, Max: maxL,
		Window: adaptive.Window{MinDuration: 1, MaxDuration: 1, MinSamples: 1},
	}, adaptive.WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	check := func(when string) {
		if l := sem.Config().MaxConcurrentCalls; l < minL || l > maxL {
			t.Fatalf("%s: limit %d outside [%d, %d]", when, l, minL, maxL)
		}
	}
	// window makes k calls that each take rtt.
	window := func(k int, rtt time.Duration, dropped bool) {
		var calls []adaptive.Call
		for range max(1, k) {
			c, ok := b.TryAcquire()
			if !ok {
				break
			}
			calls = append(calls, c)
		}
		clock.Advance(rtt)
		var err error
		if dropped {
			err = context.DeadlineExceeded
		}
		for _, c := range calls {
			c.Finish(err)
		}
	}
	for n := 0; len(data) >= 10 && n < 64; n++ {
		rtt := time.Duration(binary.LittleEndian.Uint64(data) & (1<<56 - 1))
		window(int(data[8])%(maxL+1), rtt, data[9]&1 == 1)
		check("sample")
		data = data[10:]
	}
	if minL == maxL {
		return
	}
	for range 2 { // two floors in a row: the limit must leave the floor
		for i := 0; sem.Config().MaxConcurrentCalls == minL; i++ {
			if i == recoveryBudget {
				t.Fatalf("limit stuck at the floor %d after %d healthy windows (%+v)", minL, i, b.Stats())
			}
			window(sem.Config().MaxConcurrentCalls, 100*time.Millisecond, false)
			check("recovery")
		}
		window(1, 100*time.Millisecond, true) // one drop brings it back down, maybe
	}
	testkit.CheckPermits(t, b)
}
