package bench_test

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sync/semaphore"

	bulkhead "github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/testkit"
)

// The scale benchmark (docs/benchmarks.md, "The queue at scale"): N waiters
// on one bulkhead, for N in -scale.sizes, against x/sync where it has an
// equivalent. Leaves are BenchmarkScale/<op>/N=<n>/<peer>; `make
// bench-scale` (bench/scale.mk) runs each leaf in its own process, round
// after round (scripts/interleave.sh). Each reports per waiter:
//   - ns/waiter: the timed operation's wall time divided by N;
//   - B/waiter (enqueue only): live heap after the waiters queued;
//   - created/waiter: goroutines the runtime created during the operation;
//   - peak-goroutines: the most goroutines alive at once during it
//     (sampled every 100 µs);
//   - maxLockHold-µs and maxLockHoldCPU-µs (rxbulkhead, built with -tags
//     bulkheadlockhold, Linux): the longest time the bulkhead's lock was
//     held during it, in wall time and in the holding thread's CPU time.
//
// The garbage collector is off during the timed part (for every peer), so
// that a collection that happens to start while the lock is held (its mark
// assists and pauses are the runtime's, at any lock) is not counted as a
// hold; what the waiters keep alive is measured by B/waiter. The wall-time
// hold still includes any time the holding thread was descheduled by the
// OS (the benchmark machine has two cores, shared); the CPU-time hold does
// not.
// `make test` runs the small sizes only (TestScaleSmall).

var scaleSizes = flag.String("scale.sizes", "1000,10000", "comma-separated numbers of waiters for BenchmarkScale")

func sizes(b *testing.B) []int {
	var out []int
	for _, f := range splitComma(*scaleSizes) {
		var n int
		if _, err := fmt.Sscan(f, &n); err != nil || n <= 0 {
			b.Fatalf("-scale.sizes: bad size %q", f)
		}
		out = append(out, n)
	}
	return out
}

func splitComma(s string) []string {
	var out []string
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == ',' {
			if i > start {
				out = append(out, s[start:i])
			}
			start = i + 1
		}
	}
	return out
}

// scaleRun is what one iteration of a leaf measured.
type scaleRun struct {
	elapsed   time.Duration
	heap      float64 // live heap added by the waiters (enqueue only)
	created   uint64
	peak      int
	lockHoldN int64
	// lockHoldCPUN is the longest hold in the holding thread's CPU time,
	// which leaves out the OS descheduling the thread mid-hold.
	lockHoldCPUN int64
}

// scaleOp is one operation on n waiters for one peer: it sets up untimed,
// then calls timed(f) around the part to measure.
type scaleOp func(b testing.TB, n int, m *meter) scaleRun

type scalePeer struct {
	name string
	op   scaleOp
}

var scaleOps = []struct {
	name  string
	peers []scalePeer
}{
	{"enqueue", []scalePeer{{"rxbulkhead", rxEnqueue}, {"xsync", xsEnqueue}}},
	{"grant-loop", []scalePeer{{"rxbulkhead", rxGrantLoop}, {"xsync", xsGrantLoop}}},
	{"grant-chain", []scalePeer{{"rxbulkhead", rxGrantChain}, {"xsync", xsGrantChain}}},
	{"expiry-sweep", []scalePeer{{"rxbulkhead", rxExpiry}, {"xsync", xsExpiry}}},
	{"expiry-after-shortening", []scalePeer{{"rxbulkhead", rxExpiryAfterShortening}}},
	{"cancel-in-order", []scalePeer{{"rxbulkhead", rxCancel(false)}, {"xsync", xsCancel(false)}}},
	{"cancel-at-random", []scalePeer{{"rxbulkhead", rxCancel(true)}, {"xsync", xsCancel(true)}}},
}

func BenchmarkScale(b *testing.B) {
	for _, op := range scaleOps {
		b.Run(op.name, func(b *testing.B) {
			for _, n := range sizes(b) {
				b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
					for _, p := range op.peers {
						b.Run(p.name, func(b *testing.B) { runScale(b, n, p) })
					}
				})
			}
		})
	}
}

func runScale(b *testing.B, n int, p scalePeer) {
	var sum scaleRun
	b.StopTimer()
	for range b.N {
		r := p.op(b, n, &meter{})
		sum.elapsed += r.elapsed
		sum.heap += r.heap
		sum.created += r.created
		sum.peak = max(sum.peak, r.peak)
		sum.lockHoldN = max(sum.lockHoldN, r.lockHoldN)
		sum.lockHoldCPUN = max(sum.lockHoldCPUN, r.lockHoldCPUN)
	}
	total := float64(b.N) * float64(n)
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(float64(sum.elapsed.Nanoseconds())/total, "ns/waiter")
	if sum.heap != 0 {
		b.ReportMetric(sum.heap/total, "B/waiter")
	}
	b.ReportMetric(float64(sum.created)/total, "created/waiter")
	b.ReportMetric(float64(sum.peak), "peak-goroutines")
	if p.name == "rxbulkhead" && lockHoldOn {
		b.ReportMetric(float64(sum.lockHoldN)/1e3, "maxLockHold-µs")
		b.ReportMetric(float64(sum.lockHoldCPUN)/1e3, "maxLockHoldCPU-µs")
	}
}

// meter measures the timed part of an operation.
type meter struct {
	start       time.Time
	created0    uint64
	gcPercent   int
	stopSampler chan struct{}
	sampled     chan int
}

var createdSample = []metrics.Sample{{Name: "/sched/goroutines-created:goroutines"}}

func goroutinesCreated() uint64 {
	metrics.Read(createdSample)
	return createdSample[0].Value.Uint64()
}

// begin starts the clock, the goroutine sampler and the lock-hold record.
func (m *meter) begin() {
	m.stopSampler, m.sampled = make(chan struct{}), make(chan int, 1)
	ready := make(chan struct{})
	go func() {
		peak := runtime.NumGoroutine()
		close(ready)
		t := time.NewTicker(100 * time.Microsecond)
		defer t.Stop()
		for {
			select {
			case <-m.stopSampler:
				m.sampled <- max(peak, runtime.NumGoroutine())
				return
			case <-t.C:
				peak = max(peak, runtime.NumGoroutine())
			}
		}
	}()
	<-ready
	runtime.GC()
	m.gcPercent = debug.SetGCPercent(-1)
	resetLockHold()
	m.created0 = goroutinesCreated()
	m.start = time.Now()
}

// end stops the clock and returns what was measured; the sampler's own
// goroutine is not counted.
func (m *meter) end() scaleRun {
	elapsed := time.Since(m.start)
	created := goroutinesCreated() - m.created0
	hold, holdCPU := maxLockHold(), maxLockHoldCPU()
	debug.SetGCPercent(m.gcPercent)
	close(m.stopSampler)
	return scaleRun{elapsed: elapsed, created: created, peak: <-m.sampled - 1, lockHoldN: hold, lockHoldCPUN: holdCPU}
}

// fullBulkhead returns a bulkhead of one permit, held, with an unbounded
// FIFO queue, on a virtual clock.
func fullBulkhead(b testing.TB, wait time.Duration) (*bulkhead.Semaphore, *testkit.VirtualClock) {
	clock := testkit.NewVirtualClock(time.Unix(0, 0))
	s, err := bulkhead.New("scale", bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: wait, MaxQueuedCalls: bulkhead.Unbounded}, bulkhead.WithClock(clock))
	if err != nil {
		b.Fatal(err)
	}
	if !s.TryAcquirePermission() {
		b.Fatal("permit not free")
	}
	return s, clock
}

func rxEnqueue(b testing.TB, n int, m *meter) scaleRun {
	s, _ := fullBulkhead(b, time.Hour)
	acqs := make([]*bulkhead.Acquisition, n)
	before := snapshot()
	m.begin()
	for i := range acqs {
		acqs[i] = s.AcquirePermissionAsync()
	}
	r := m.end()
	after := snapshot()
	r.heap, _, _ = after.sub(before)
	runtime.KeepAlive(acqs)
	return r
}

// xsWaiters starts n goroutines blocked in Acquire of sem (with ctxOf(i)),
// each calling then(i, err) when it returns, and waits until they block.
//
// x/sync does not say how many wait, so this watches the runtime's count of
// waiting goroutines: it stops once the count has grown by n, or once every
// goroutine has entered Acquire and the count has not moved for 5 ms (other
// goroutines of the runtime, such as GC workers, come and go).
// It returns when the waiters were last seen to be all blocked (the last
// change of the count), which the enqueue benchmark takes as its end.
func xsWaiters(n int, sem *semaphore.Weighted, ctxOf func(int) context.Context, then func(int, error)) (queued time.Time) {
	base := waitingGoroutines()
	var entered atomic.Int64
	for i := range n {
		go func() {
			entered.Add(1)
			then(i, sem.Acquire(ctxOf(i), 1))
		}()
	}
	last, still := uint64(0), 0
	for {
		w := waitingGoroutines()
		if w >= base+uint64(n) {
			return time.Now()
		}
		if w == last && entered.Load() == int64(n) {
			if still++; still >= 50 {
				return queued
			}
		} else {
			last, still, queued = w, 0, time.Now()
		}
		time.Sleep(100 * time.Microsecond)
	}
}

var waitingSample = []metrics.Sample{{Name: "/sched/goroutines/waiting:goroutines"}}

func waitingGoroutines() uint64 {
	metrics.Read(waitingSample)
	return waitingSample[0].Value.Uint64()
}

func xsEnqueue(b testing.TB, n int, m *meter) scaleRun {
	sem := semaphore.NewWeighted(1)
	_ = sem.Acquire(context.Background(), 1)
	ctx, cancel := context.WithCancel(context.Background())
	var done sync.WaitGroup
	done.Add(n)
	warmGoroutines(n)
	before := snapshot()
	m.begin()
	queued := xsWaiters(n, sem, func(int) context.Context { return ctx }, func(int, error) { done.Done() })
	r := m.end()
	r.elapsed = queued.Sub(m.start)
	after := snapshot()
	h, st, _ := after.sub(before)
	r.heap = h + st
	cancel()
	done.Wait()
	return r
}

func rxGrantLoop(b testing.TB, n int, m *meter) scaleRun {
	s, _ := fullBulkhead(b, bulkhead.NoTimeout)
	var granted atomic.Int64
	for range n {
		s.AcquirePermissionAsync().OnDone(func(error) { granted.Add(1) })
	}
	m.begin()
	for range n {
		s.FinishCall() // grants the next waiter, whose callback returns at once
	}
	r := m.end()
	if granted.Load() != int64(n) {
		b.Fatalf("%d of %d granted", granted.Load(), n)
	}
	s.FinishCall()
	return r
}

func xsGrantLoop(b testing.TB, n int, m *meter) scaleRun {
	sem := semaphore.NewWeighted(1)
	_ = sem.Acquire(context.Background(), 1)
	granted := make(chan struct{}, n)
	xsWaiters(n, sem, func(int) context.Context { return context.Background() }, func(int, error) { granted <- struct{}{} })
	m.begin()
	for range n {
		// The grant is the wake-up of the next goroutine, which returns
		// without giving back; waiting for it makes each Release match an
		// acquisition even if a waiter had not queued yet.
		sem.Release(1)
		<-granted
	}
	return m.end()
}

func rxGrantChain(b testing.TB, n int, m *meter) scaleRun {
	s, _ := fullBulkhead(b, bulkhead.NoTimeout)
	var done sync.WaitGroup
	done.Add(n)
	for range n {
		s.AcquirePermissionAsync().OnDone(func(error) {
			s.FinishCall() // the next waiter's grant, inside this callback
			done.Done()
		})
	}
	m.begin()
	s.FinishCall()
	done.Wait()
	return m.end()
}

func xsGrantChain(b testing.TB, n int, m *meter) scaleRun {
	sem := semaphore.NewWeighted(1)
	_ = sem.Acquire(context.Background(), 1)
	var done sync.WaitGroup
	done.Add(n)
	xsWaiters(n, sem, func(int) context.Context { return context.Background() }, func(int, error) {
		sem.Release(1)
		done.Done()
	})
	m.begin()
	sem.Release(1)
	done.Wait()
	r := m.end()
	return r
}

func rxExpiry(b testing.TB, n int, m *meter) scaleRun {
	s, clock := fullBulkhead(b, time.Second)
	var done sync.WaitGroup
	done.Add(n)
	for range n {
		s.AcquirePermissionAsync().OnDone(func(error) { done.Done() })
	}
	m.begin()
	clock.Advance(time.Second) // one sweep, on this goroutine
	done.Wait()
	r := m.end()
	s.FinishCall()
	return r
}

func xsExpiry(b testing.TB, n int, m *meter) scaleRun {
	sem := semaphore.NewWeighted(1)
	_ = sem.Acquire(context.Background(), 1)
	ctx, cancel := context.WithCancel(context.Background())
	var done sync.WaitGroup
	done.Add(n)
	xsWaiters(n, sem, func(int) context.Context { return ctx }, func(int, error) { done.Done() })
	m.begin()
	cancel() // every wait ends at once, as a shared deadline would
	done.Wait()
	return m.end()
}

// rxExpiryAfterShortening: n waiters wait an hour; ChangeConfig shortens
// the wait to a second; then each of 1,000 newcomers (timed) queues and
// expires in a timer fire of its own. Reported per fire, not per waiter.
func rxExpiryAfterShortening(b testing.TB, n int, m *meter) scaleRun {
	const fires = 1000
	s, clock := fullBulkhead(b, time.Hour)
	for range n {
		s.AcquirePermissionAsync()
	}
	if err := s.ChangeConfig(bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Second, MaxQueuedCalls: bulkhead.Unbounded}); err != nil {
		b.Fatal(err)
	}
	m.begin()
	for range fires {
		a := s.AcquirePermissionAsync()
		clock.Advance(time.Second)
		if a.Err() == bulkhead.ErrPending {
			b.Fatal("the newcomer did not expire")
		}
	}
	r := m.end()
	r.elapsed = r.elapsed * time.Duration(n) / fires // reported per fire
	return r
}

func rxCancel(random bool) scaleOp {
	return func(b testing.TB, n int, m *meter) scaleRun {
		s, _ := fullBulkhead(b, time.Hour)
		acqs := make([]*bulkhead.Acquisition, n)
		for i := range acqs {
			acqs[i] = s.AcquirePermissionAsync()
		}
		if random {
			rand.New(rand.NewPCG(1, 2)).Shuffle(n, func(i, j int) { acqs[i], acqs[j] = acqs[j], acqs[i] })
		}
		m.begin()
		for _, a := range acqs {
			a.Cancel()
		}
		r := m.end()
		s.FinishCall()
		return r
	}
}

func xsCancel(random bool) scaleOp {
	return func(b testing.TB, n int, m *meter) scaleRun {
		sem := semaphore.NewWeighted(1)
		_ = sem.Acquire(context.Background(), 1)
		cancels := make([]context.CancelFunc, n)
		ctxs := make([]context.Context, n)
		for i := range ctxs {
			ctxs[i], cancels[i] = context.WithCancel(context.Background())
		}
		var done sync.WaitGroup
		done.Add(n)
		xsWaiters(n, sem, func(i int) context.Context { return ctxs[i] }, func(int, error) { done.Done() })
		if random {
			rand.New(rand.NewPCG(1, 2)).Shuffle(n, func(i, j int) { cancels[i], cancels[j] = cancels[j], cancels[i] })
		}
		m.begin()
		for _, c := range cancels {
			c()
		}
		done.Wait()
		return m.end()
	}
}

// TestScaleSmall runs every rxbulkhead operation of BenchmarkScale once at
// N = 1,000 (the large sizes are `make bench-scale`'s) and checks the
// goroutine figures that must not grow with N: none for queuing, plain
// grants, expiry after a shortening and cancels, at most one per 100
// waiters for an expiry sweep. (A release chain still starts goroutines:
// see docs/benchmarks.md, "The queue at scale".)
func TestScaleSmall(t *testing.T) {
	const n = 1000
	for _, op := range scaleOps {
		for _, p := range op.peers {
			if p.name != "rxbulkhead" || op.name == "grant-chain" {
				continue
			}
			t.Run(op.name, func(t *testing.T) {
				r := p.op(t, n, &meter{})
				limit := uint64(0)
				if op.name == "expiry-sweep" {
					limit = n / 100
				}
				if r.created > limit {
					t.Fatalf("%s of %d waiters created %d goroutines, want at most %d", op.name, n, r.created, limit)
				}
			})
		}
	}
}
