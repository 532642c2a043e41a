package flowable_test

import (
	"crypto/sha256"
	"encoding/binary"
	"runtime"
	"testing"
	"time"

	bulkhead "github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/flowable"
)

// sink requests everything and sums what it receives.
type sink struct {
	sub       flowable.Subscription
	sum, n    int
	completed bool
}

func (s *sink) OnSubscribe(sub flowable.Subscription) { s.sub = sub; sub.Request(flowable.Unbounded) }
func (s *sink) OnNext(v int)                          { s.sum += v; s.n++ }
func (s *sink) OnError(error)                         {}
func (s *sink) OnComplete()                           { s.completed = true }

// hashSink does a small, realistic amount of work per element (a SHA-256
// of the value, about 100-200 ns).
type hashSink struct {
	sink
	h [sha256.Size]byte
}

func (s *hashSink) OnNext(v int) {
	var buf [8]byte
	binary.LittleEndian.PutUint64(buf[:], uint64(v)^uint64(s.h[0]))
	s.h = sha256.Sum256(buf[:])
	s.n++
}

// BenchmarkRange1e6 compares a Range of 1e6 elements with and without the
// Bulkhead operator. Range is fused with the operator ("bulkhead"): it
// delivers elements straight to the subscriber, so the per-element cost is
// that of "bare" and only subscribe and completion differ. The same Range
// hidden behind a wrapper ("bulkhead-foreign") takes the path of any other
// Publisher: elements pass through the operator's Subscriber without
// touching the bulkhead (no atomic, no defer) but cost one extra call each,
// large next to a subscriber that only adds ("sum"), lost in the noise next
// to one that does real work ("sha256").
func BenchmarkRange1e6(b *testing.B) {
	const n = 1_000_000
	bh, err := bulkhead.New("bench", bulkhead.Config{MaxConcurrentCalls: 1})
	if err != nil {
		b.Fatal(err)
	}
	sinks := []struct {
		name string
		new  func() (flowable.Subscriber[int], *sink)
	}{
		{"sum", func() (flowable.Subscriber[int], *sink) { s := &sink{}; return s, s }},
		{"sha256", func() (flowable.Subscriber[int], *sink) { s := &hashSink{}; return s, &s.sink }},
	}
	for _, sk := range sinks {
		for _, bc := range []struct {
			name string
			p    flowable.Publisher[int]
		}{
			{"bare", flowable.Range(0, n)},
			{"bulkhead", flowable.Bulkhead(bh, flowable.Range(0, n))},
			{"bulkhead-foreign", flowable.Bulkhead[int](bh, foreign[int]{flowable.Range(0, n)})},
		} {
			b.Run(sk.name+"/"+bc.name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					sub, s := sk.new()
					bc.p.Subscribe(sub)
					if s.n != n || !s.completed {
						b.Fatalf("delivered %d", s.n)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/elem")
			})
		}
	}
	if bh.Metrics().InFlightCalls != 0 {
		b.Fatal("permit leaked")
	}
}

// BenchmarkSubscribeCompleteJust1 subscribes Just(1) through a bulkhead
// with free permits and runs it to completion: acquire (fast path),
// subscribe, one element, OnComplete.
func BenchmarkSubscribeCompleteJust1(b *testing.B) {
	bh, err := bulkhead.New("bench", bulkhead.Config{MaxConcurrentCalls: 1})
	if err != nil {
		b.Fatal(err)
	}
	p := flowable.Bulkhead(bh, flowable.Just(1))
	s := &sink{}
	b.ReportAllocs()
	for b.Loop() {
		s.completed = false
		p.Subscribe(s)
		if !s.completed {
			b.Fatal("not completed")
		}
	}
	if bh.Metrics().InFlightCalls != 0 {
		b.Fatal("permit leaked")
	}
}

// BenchmarkPendingSubscriptions100k holds the only permit and subscribes
// 100k times: each subscription waits as a record in the bulkhead's queue
// plus the operator's state, with no goroutine. It reports the live heap
// per pending subscription and the goroutines added.
func BenchmarkPendingSubscriptions100k(b *testing.B) {
	const n = 100_000
	var heapPer, goroutines float64
	for b.Loop() {
		bh, err := bulkhead.New("bench", bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Hour, MaxQueuedCalls: bulkhead.Unbounded})
		if err != nil {
			b.Fatal(err)
		}
		bh.TryAcquirePermission()
		p := flowable.Bulkhead(bh, flowable.Just(1))
		sinks := make([]sink, n)
		g0 := runtime.NumGoroutine()
		h0 := liveHeap()
		for i := range sinks {
			p.Subscribe(&sinks[i])
		}
		h1 := liveHeap()
		heapPer = float64(h1-h0) / n
		goroutines = float64(runtime.NumGoroutine() - g0)
		if bh.Metrics().QueuedCalls != n {
			b.Fatal("not all pending")
		}
		for i := range sinks {
			sinks[i].sub.Cancel()
		}
		bh.ReleasePermission()
		if m := bh.Metrics(); m.InFlightCalls != 0 || m.QueuedCalls != 0 {
			b.Fatalf("leak: %+v", m)
		}
	}
	b.ReportMetric(heapPer, "B/pending")
	b.ReportMetric(goroutines, "goroutines-added")
}

func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
