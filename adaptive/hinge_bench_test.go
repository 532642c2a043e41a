package adaptive

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// filledHinge is a Hinge that has seen 200 calls at every level up to
// limit from a partner of capacity limit/2 (50 ms, 10 % noise), S measured
// long ago (so a decision fits S and C both), between two epochs.
func filledHinge(limit int) *Hinge {
	h := &Hinge{}
	rng := rand.New(rand.NewPCG(1, 2))
	c := float64(limit) / 2
	for range 200 {
		for k := 1; k <= limit; k++ {
			rtt := time.Duration(float64(50*time.Millisecond) * max(1, float64(k)/c) * (0.9 + 0.2*rng.Float64()))
			h.record(float64(limit), Sample{RTT: rtt, N: 1, InFlight: k, PerCall: true})
		}
	}
	h.want, h.cutAt, h.s, h.now, h.sAt = float64(limit), -1, float64(50*time.Millisecond), float64(time.Hour), float64(time.Hour)
	return h
}

// BenchmarkHingeUpdate measures Update for a sample that only records its
// call (per call) and for one that ends an epoch (per decision: the joint
// fit, the fit of C, the decay), at limits 20, 100 and 1000 with every
// level up to the limit filled.
//
//	go test ./adaptive -run '^$' -bench BenchmarkHingeUpdate -benchmem
func BenchmarkHingeUpdate(b *testing.B) {
	for _, limit := range []int{20, 100, 1000} {
		b.Run(fmt.Sprintf("per_call/limit=%d", limit), func(b *testing.B) {
			h := filledHinge(limit)
			s := Sample{RTT: 50 * time.Millisecond, N: 1, PerCall: true}
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				s.InFlight = 1 + i%limit
				h.Update(float64(limit), s)
			}
		})
		b.Run(fmt.Sprintf("per_decision/limit=%d", limit), func(b *testing.B) {
			base := filledHinge(limit)
			h := *base
			h.lv = make([]hingeLevel, len(base.lv))
			s := Sample{RTT: 50 * time.Millisecond, N: 1, InFlight: limit / 2, Elapsed: time.Second, PerCall: true}
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				lv, ks := h.lv, h.ks
				h = *base
				h.lv, h.ks = lv, ks
				copy(h.lv, base.lv)
				b.StartTimer()
				h.Update(float64(limit), s)
			}
		})
	}
}
