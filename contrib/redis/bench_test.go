package redis_test

import (
	"context"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/rxbulkhead/bulkhead"

	rxredis "github.com/rxbulkhead/bulkhead/contrib/redis"
)

// Benchmarks against the shared loopback redis-server. Run them side by
// side, interleaved (see redis.mk: bench-redis).

// clientCPU is this process's CPU time (every thread, user and system):
// the benchmarks report it per op as client-cpu-ns/op, which excludes the
// redis-server (another process) and drifts far less with the machine's
// load than wall time.
func clientCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// loopWithCPU runs op in b.Loop and reports client-cpu-ns/op.
func loopWithCPU(b *testing.B, op func()) {
	b.ReportAllocs()
	start, n := clientCPU(), 0
	for b.Loop() {
		op()
		n++
	}
	b.ReportMetric(float64(clientCPU()-start)/float64(max(n, 1)), "client-cpu-ns/op")
}

// BenchmarkAcquireRelease compares one acquire+release of a fleet permit
// through the public API (AcquirePermissionAsync, wait, FinishCall) with a
// plain INCR+DECR pair from the same client: the goal is at most 2.5x.
func BenchmarkAcquireRelease(b *testing.B) {
	srv := sharedServer(b)
	b.Run("fleet", func(b *testing.B) {
		s, _ := newStore(b, srv, rxredis.StoreConfig{})
		bh := newBulkhead(b, s, "bench", fleetConfig(10, time.Second))
		loopWithCPU(b, func() {
			a := bh.AcquirePermissionAsync()
			<-a.Done()
			if a.Err() != nil {
				b.Fatal(a.Err())
			}
			bh.FinishCall()
		})
	})
	// The guide's client options: go-redis applies the Store's deadlines
	// itself (the Store bounds each round trip all the same).
	b.Run("fleet-ctxtimeout", func(b *testing.B) {
		cfg := rxredis.StoreConfig{KeyPrefix: prefixFor(b)}
		c := srv.client(b, func(o *goredis.Options) { o.ContextTimeoutEnabled = true })
		flushKeys(b, c, cfg.KeyPrefix)
		s, err := rxredis.NewStore(c, cfg)
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		bh := newBulkhead(b, s, "bench", fleetConfig(10, time.Second))
		loopWithCPU(b, func() {
			a := bh.AcquirePermissionAsync()
			<-a.Done()
			if a.Err() != nil {
				b.Fatal(a.Err())
			}
			bh.FinishCall()
		})
	})
	b.Run("incr-decr", func(b *testing.B) {
		c := srv.client(b)
		key := prefixFor(b) + "counter"
		flushKeys(b, c, prefixFor(b))
		ctx := context.Background()
		loopWithCPU(b, func() {
			if err := c.Incr(ctx, key).Err(); err != nil {
				b.Fatal(err)
			}
			if err := c.Decr(ctx, key).Err(); err != nil {
				b.Fatal(err)
			}
		})
	})
}

// BenchmarkQueuedWaiters queues 10,000 calls in one process (one permit,
// held) and reports what each costs once all hold a ticket in Redis:
// goroutines and heap bytes per waiter, and the Redis connections open.
func BenchmarkQueuedWaiters(b *testing.B) {
	srv := sharedServer(b)
	for _, waiters := range []int{100, 10000} {
		b.Run(strconv.Itoa(waiters), func(b *testing.B) { benchmarkQueuedWaiters(b, srv, waiters) })
	}
}

func benchmarkQueuedWaiters(b *testing.B, srv *server, waiters int) {
	for b.Loop() {
		c := srv.client(b)
		prefix := prefixFor(b)
		flushKeys(b, c, prefix)
		s, err := rxredis.NewStore(c, rxredis.StoreConfig{KeyPrefix: prefix})
		if err != nil {
			b.Fatal(err)
		}
		bh, _ := rxredis.NewBulkhead(s, "bench", fleetConfig(1, time.Hour))
		held := bh.Acquire()
		<-held.Acquisition().Done()
		as := make([]*bulkhead.Acquisition, waiters)
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		g0 := runtime.NumGoroutine()
		for i := range as {
			as[i] = bh.AcquirePermissionAsync()
		}
		deadline := time.Now().Add(30 * time.Second)
		for {
			m, err := bh.FleetMetrics(context.Background())
			if err == nil && m.QueuedCalls == waiters {
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("not all waiters queued in Redis: %+v %v", m, err)
			}
			time.Sleep(10 * time.Millisecond)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(runtime.NumGoroutine()-g0)/float64(waiters), "goroutines/waiter")
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(waiters), "B/waiter")
		b.ReportMetric(float64(c.PoolStats().TotalConns), "redis-conns")
		for _, a := range as {
			a.Cancel()
		}
		held.Finish()
		runtime.KeepAlive(as)
		s.Close()
	}
}

// roundTrips counts the round trips a client makes (a pipeline is one) and
// the commands they carry.
type roundTrips struct{ trips, cmds atomic.Int64 }

func (h *roundTrips) DialHook(next goredis.DialHook) goredis.DialHook { return next }

func (h *roundTrips) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		h.trips.Add(1)
		h.cmds.Add(1)
		return next(ctx, cmd)
	}
}

func (h *roundTrips) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error {
		h.trips.Add(1)
		h.cmds.Add(int64(len(cmds)))
		return next(ctx, cmds)
	}
}

// BenchmarkRenewal holds 1,000 permits in one process and counts, per
// renewal interval, the round trips the process makes (go-redis hook) and
// the scripts Redis runs (INFO commandstats): the goal is one of each.
func BenchmarkRenewal(b *testing.B) {
	srv := sharedServer(b)
	const permits = 1000
	c := srv.client(b)
	hook := &roundTrips{}
	c.AddHook(hook)
	prefix := prefixFor(b)
	flushKeys(b, c, prefix)
	const interval = 100 * time.Millisecond
	s, err := rxredis.NewStore(c, rxredis.StoreConfig{KeyPrefix: prefix, LeaseTTL: time.Second, RenewInterval: interval, PollInterval: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	bh, _ := rxredis.NewBulkhead(s, "bench", fleetConfig(permits, time.Second))
	held := make([]*rxredis.Permit, permits)
	for i := range held {
		held[i] = bh.Acquire()
	}
	for _, p := range held {
		<-p.Acquisition().Done()
		if err := p.Acquisition().Err(); err != nil {
			b.Fatal(err)
		}
	}
	admin := srv.client(b)
	time.Sleep(2 * interval) // past the acquisitions' round trips
	trips0, cmds0, scripts0 := hook.trips.Load(), hook.cmds.Load(), evalshaCalls(b, admin)
	start := time.Now()
	b.ResetTimer()
	for b.Loop() {
		time.Sleep(interval)
	}
	b.StopTimer()
	intervals := float64(time.Since(start)) / float64(interval)
	b.ReportMetric(float64(hook.trips.Load()-trips0)/intervals, "roundtrips/interval")
	b.ReportMetric(float64(hook.cmds.Load()-cmds0)/intervals, "cmds/interval")
	b.ReportMetric(float64(evalshaCalls(b, admin)-scripts0)/intervals, "scripts/interval")
	if m, _ := bh.FleetMetrics(context.Background()); m.InFlightCalls != permits || m.LeasesLost != 0 {
		b.Errorf("after renewals: %+v, want %d leases and none lost", m, permits)
	}
	for _, p := range held {
		p.Finish()
	}
}

// evalshaCalls reads the number of EVALSHA calls from INFO commandstats.
func evalshaCalls(b *testing.B, c *goredis.Client) int64 {
	info, err := c.Info(context.Background(), "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(info, "\n") {
		if rest, ok := strings.CutPrefix(line, "cmdstat_evalsha:calls="); ok {
			n, _ := strconv.ParseInt(rest[:strings.IndexByte(rest, ',')], 10, 64)
			return n
		}
	}
	return 0
}

// BenchmarkEventLoop runs the #1592-style event-loop experiment (see
// eventloop_child_test.go) with one in-process Semaphore per partner, and
// with fleet bulkheads of the same limits shared by 3 processes that each
// run a third of the clients; it reports the healthy partners' completed
// calls per second (run with -benchtime 1x: one run is 4 s).
func BenchmarkEventLoop(b *testing.B) {
	srv := sharedServer(b)
	b.Run("semaphore", func(b *testing.B) {
		for b.Loop() {
			bhs, err := elSemaphores()
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(elRate(elRun(bhs, 0, 1, time.Now().Add(50*time.Millisecond))), "healthy-calls/s")
		}
	})
	b.Run("fleet-3-processes", func(b *testing.B) {
		for b.Loop() {
			prefix := prefixFor(b)
			c := srv.client(b)
			flushKeys(b, c, prefix)
			const procs = 3
			start := time.Now().Add(700 * time.Millisecond)
			var waits []func() childResult
			for i := range procs {
				_, sc := startChild(b, "eventloop", childParams{Addr: srv.Addr(), Prefix: prefix, Index: i, Procs: procs, Start: start.UnixNano(),
					LeaseTTL: 10 * time.Second, Renew: 3 * time.Second})
				waits = append(waits, func() childResult { return readResult(b, sc) })
			}
			var total int64
			for _, w := range waits {
				total += w().Grants
			}
			b.ReportMetric(elRate(total), "healthy-calls/s")
		}
	})
}

// BenchmarkRegistryKeyFlood sends keys distinct keys through the keyed
// path of a Registry capped at 1,000 bulkheads (each call acquired and
// finished) and reports the heap per live bulkhead after GC, and the heap
// growth per key: flat once the cap is reached, since the keys beyond it
// share the catch-all (issue 25, for the fleet Registry).
func BenchmarkRegistryKeyFlood(b *testing.B) {
	srv := sharedServer(b)
	for _, keys := range []int{1000, 10000} {
		b.Run(strconv.Itoa(keys), func(b *testing.B) {
			for b.Loop() {
				c := srv.client(b)
				prefix := "rxbt:flood" + strconv.Itoa(keys) + ":" // a prefix of a usual length
				flushKeys(b, c, prefix)
				s, err := rxredis.NewStore(c, rxredis.StoreConfig{KeyPrefix: prefix})
				if err != nil {
					b.Fatal(err)
				}
				runtime.GC()
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				reg, err := rxredis.NewRegistry(s, fleetConfig(5, 0),
					rxredis.WithMaxBulkheads(1000, fleetConfig(50, 0)), rxredis.WithIdleTimeout(time.Hour))
				if err != nil {
					b.Fatal(err)
				}
				for i := range keys {
					p := reg.Acquire("tenant-"+strconv.Itoa(i), bulkhead.CallOptions{})
					<-p.Acquisition().Done()
					if err := p.Acquisition().Err(); err != nil {
						b.Fatal(err)
					}
					p.Finish()
				}
				runtime.GC()
				runtime.ReadMemStats(&after)
				st := reg.Stats()
				grown := float64(after.HeapAlloc) - float64(before.HeapAlloc)
				b.ReportMetric(grown/float64(st.Bulkheads), "B/bulkhead")
				b.ReportMetric(grown/float64(keys), "B/key")
				b.ReportMetric(float64(st.Bulkheads), "bulkheads")
				runtime.KeepAlive(reg)
				s.Close()
			}
		})
	}
}
