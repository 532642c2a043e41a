package bench_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/rxbulkhead/bulkhead/bench/peer"
)

// floorSem is the floor of an async fast path: a bare atomic counter of
// free permits, taken by one CAS and given back by one atomic add, with no
// queue, no events and no outcome. It is not a bulkhead (a call that finds
// no permit is refused, nobody waits); it is what the harness costs around
// the two atomic read-modify-writes any permit-word semaphore must make.
type floorSem struct{ free atomic.Int64 }

var errFloorFull = errors.New("floor: no free permit")

func newFloorSem(n int) *floorSem {
	f := &floorSem{}
	f.free.Store(int64(n))
	return f
}

func (f *floorSem) Name() string { return "floor" }

func (f *floorSem) TryAcquire() bool {
	for {
		v := f.free.Load()
		if v <= 0 {
			return false
		}
		if f.free.CompareAndSwap(v, v-1) {
			return true
		}
	}
}

func (f *floorSem) Acquire(ctx context.Context) error {
	if f.TryAcquire() {
		return nil
	}
	return errFloorFull
}

func (f *floorSem) AcquireAsync(_ context.Context, cb func(error)) {
	if f.TryAcquire() {
		cb(nil)
		return
	}
	cb(errFloorFull)
}

func (f *floorSem) Release() { f.free.Add(1) }

// asyncFloorPeers are the leaves of BenchmarkAsyncFloor: the floor, and
// the two peers whose callback runs on the calling goroutine when a
// permit is free (so they run without the WaitGroup too).
func asyncFloorPeers() []peer.Factory {
	fs := []peer.Factory{{Name: "floor", New: func(n int) peer.Peer { return newFloorSem(n) }}}
	for _, f := range peer.All() {
		if f.Name == "rxbulkhead" || f.Name == "xsync" {
			fs = append(fs, f)
		}
	}
	return fs
}

// BenchmarkAsyncFloor measures the async fast path against its floor
// (issue 26): wg/* is BenchmarkAsync's harness exactly (a WaitGroup Add
// before the request, Done in the callback, Wait after it), so
// wg/rxbulkhead ÷ wg/xsync is BenchmarkAsync's ratio and wg/floor ÷
// wg/xsync is the lowest ratio any semaphore that takes and gives a
// permit with one atomic read-modify-write each can reach in it; inline/*
// drops the WaitGroup (the callback gives the permit back and counts the
// call, as a user's continuation that runs inline would), so that the
// harness's own atomics no longer weigh on the ratio. Both run through
// the peer.Peer interface, as BenchmarkAsync does.
func BenchmarkAsyncFloor(b *testing.B) {
	ctx := context.Background()
	b.Run("wg", func(b *testing.B) {
		for _, f := range asyncFloorPeers() {
			b.Run(f.Name, func(b *testing.B) {
				p := f.New(4)
				var wg sync.WaitGroup
				cb := func(err error) {
					if err == nil {
						p.Release()
					}
					wg.Done()
				}
				b.ReportAllocs()
				for b.Loop() {
					wg.Add(1)
					p.AcquireAsync(ctx, cb)
					wg.Wait()
				}
			})
		}
	})
	b.Run("inline", func(b *testing.B) {
		for _, f := range asyncFloorPeers() {
			b.Run(f.Name, func(b *testing.B) {
				p := f.New(4)
				calls, granted := 0, 0
				cb := func(err error) {
					if err == nil {
						p.Release()
						granted++
					}
				}
				b.ReportAllocs()
				for b.Loop() {
					calls++
					p.AcquireAsync(ctx, cb)
				}
				if granted != calls {
					b.Fatalf("%d of %d calls granted at once and given back inline", granted, calls)
				}
			})
		}
	})
}
