package ro_test

import (
	"testing"

	"github.com/samber/ro"

	bulkhead "github.com/rxbulkhead/bulkhead"
	bro "github.com/rxbulkhead/bulkhead/contrib/ro"
)

// Per-subscription overhead: subscribe to Just(1) and receive it, bare,
// through ro's own Map (one operator, for scale) and through an open
// bulkhead.
func BenchmarkSubscribeJust(b *testing.B) {
	open, err := bulkhead.New("bench", bulkhead.Config{MaxConcurrentCalls: 1 << 20})
	if err != nil {
		b.Fatal(err)
	}
	run := func(b *testing.B, obs ro.Observable[int]) {
		b.ReportAllocs()
		sum := 0
		o := ro.NewObserver(func(v int) { sum += v }, func(error) {}, func() {})
		for b.Loop() {
			obs.Subscribe(o)
		}
		if sum == 0 {
			b.Fatal("no value received")
		}
	}
	b.Run("bare", func(b *testing.B) { run(b, ro.Just(1)) })
	b.Run("bare+Map", func(b *testing.B) { run(b, ro.Pipe1(ro.Just(1), ro.Map(func(v int) int { return v }))) })
	b.Run("bulkhead", func(b *testing.B) { run(b, bro.Bulkhead(open, ro.Just(1))) })
}
