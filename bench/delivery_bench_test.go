package bench_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/bench/peer"
)

// semaphoreWith is rxbulkhead with a given MaxWaitDuration, behind the
// peer shape.
type semaphoreWith struct{ *peer.Semaphore }

func newSemaphoreWith(n int, wait time.Duration) semaphoreWith {
	s, err := bulkhead.New("bench", bulkhead.Config{MaxConcurrentCalls: n, MaxWaitDuration: wait, MaxQueuedCalls: bulkhead.Unbounded})
	if err != nil {
		panic(err)
	}
	return semaphoreWith{&peer.Semaphore{S: s}}
}

// BenchmarkContendedWait is BenchmarkContended (16 goroutines, 4 permits,
// each holding its permit across a runtime.Gosched) for the blocking
// acquire only, with what separates rxbulkhead from x/sync/semaphore made
// explicit: "rxbulkhead" bounds every wait (MaxWaitDuration 1h: one clock
// read per queued call, one armed timer while anybody waits), and
// "rxbulkhead-notimeout" waits without bound as x/sync does (NoTimeout: no
// clock read, no timer). ctx is context.Background() ("bg", whose Done is
// nil) or a cancellable context ("cancel", as a server's request context).
// "+timer" runs the same in a process that has one unrelated runtime timer
// pending during the run, as any server has (an HTTP deadline, a ticker):
// the Go scheduler then reads the clock at each scheduling point whoever
// armed a timer, so the cost of rxbulkhead's one timer is already paid.
// (go test's -test.timeout alarm is stopped before benchmarks run.)
func BenchmarkContendedWait(b *testing.B) {
	const goroutines, permits = 16, 4
	peers := []struct {
		name string
		new  func() peer.Peer
	}{
		{"rxbulkhead", func() peer.Peer { return newSemaphoreWith(permits, time.Hour) }},
		{"rxbulkhead-notimeout", func() peer.Peer { return newSemaphoreWith(permits, bulkhead.NoTimeout) }},
		{"xsync", func() peer.Peer { return peer.NewWeighted(permits) }},
		{"chan", func() peer.Peer { return peer.NewChan(permits) }},
	}
	for _, kind := range []string{"bg", "bg+timer", "cancel", "cancel+timer"} {
		for _, f := range peers {
			b.Run(kind+"/"+f.name, func(b *testing.B) {
				p := f.new()
				ctx := context.Background()
				if strings.HasPrefix(kind, "cancel") {
					c, cancel := context.WithCancel(ctx)
					defer cancel()
					ctx = c
				}
				if strings.HasSuffix(kind, "+timer") {
					t := time.AfterFunc(time.Hour, func() {})
					defer t.Stop()
				}
				contend(b, p, ctx, goroutines)
			})
		}
	}
}
