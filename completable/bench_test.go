package completable_test

import (
	"testing"

	bulkhead "github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/completable"
)

// counter is an Observer that counts completions.
type counter struct{ n int }

func (c *counter) OnSubscribe(completable.Disposable) {}
func (c *counter) OnComplete()                        { c.n++ }
func (c *counter) OnError(error)                      {}

// BenchmarkSubscribeComplete subscribes Complete() and runs it to its end,
// bare and through a bulkhead with free permits: the difference is the
// operator's cost per call (acquire on the fast path, the waiting
// Disposable, the release).
func BenchmarkSubscribeComplete(b *testing.B) {
	bh, err := bulkhead.New("bench", bulkhead.Config{MaxConcurrentCalls: 1})
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name string
		c    completable.Completable
	}{
		{"bare", completable.Complete()},
		{"bulkhead", completable.Bulkhead(bh, completable.Complete())},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			var o counter
			for b.Loop() {
				bc.c.Subscribe(&o)
			}
			if o.n != b.N {
				b.Fatalf("%d completions for %d subscriptions", o.n, b.N)
			}
		})
	}
	if m := bh.Metrics(); m.InFlightCalls != 0 {
		b.Fatal("permit leaked")
	}
}
