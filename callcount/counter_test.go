package callcount_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/callcount"
	"github.com/rxbulkhead/bulkhead/pool"
	"github.com/rxbulkhead/bulkhead/testkit"
)

// newCountedRegistry returns a registry on a virtual clock (waits never
// time out unless the test advances it), checked for leaked permits at the
// end of the test, and a Counter over it closed at the end.
func newCountedRegistry(t *testing.T, defaults bulkhead.Config) (*bulkhead.Registry, *callcount.Counter) {
	t.Helper()
	clock := testkit.NewVirtualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	r, err := bulkhead.NewRegistry(defaults, bulkhead.WithSemaphoreOptions(bulkhead.WithClock(clock)))
	if err != nil {
		panic(err)
	}
	testkit.CheckRegistry(t, r)
	c := callcount.New(r)
	t.Cleanup(c.Close)
	return r, c
}

func mustRegistryBulkhead(t *testing.T, r *bulkhead.Registry, name string) *bulkhead.Semaphore {
	t.Helper()
	s, err := r.Get(name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func wantCounts(t *testing.T, c *callcount.Counter, name string, want callcount.Counts) {
	t.Helper()
	if got := c.Counts(name); got != want {
		t.Fatalf("Counts(%q) = %+v, want %+v", name, got, want)
	}
}

func TestCounterCountsEveryEventType(t *testing.T) {
	r, c := newCountedRegistry(t, bulkhead.Config{MaxConcurrentCalls: 2, MaxWaitDuration: time.Hour, MaxQueuedCalls: 1})
	s := mustRegistryBulkhead(t, r, "walmart")

	s.TryAcquirePermission()             // permitted
	s.TryAcquirePermission()             // permitted
	queued := s.AcquirePermissionAsync() // queued: no event yet
	s.AcquirePermissionAsync()           // rejected: queue full
	wantCounts(t, c, "walmart", callcount.Counts{Permitted: 2, Rejected: 1})

	queued.Cancel()       // cancelled
	s.FinishCall()        // finished
	s.ReleasePermission() // given back unused: no event
	wantCounts(t, c, "walmart", callcount.Counts{Permitted: 2, Rejected: 1, Finished: 1, Cancelled: 1})
	wantCounts(t, c, "unknown", callcount.Counts{})
}

func TestCounterCountsBulkheadsCreatedLaterFromTheirFirstEvent(t *testing.T) {
	r, c := newCountedRegistry(t, bulkhead.Config{MaxConcurrentCalls: 1})

	// Each way of creating a bulkhead: the very first call is counted.
	late := mustRegistryBulkhead(t, r, "late")
	late.TryAcquirePermission()
	late.FinishCall()
	if err := r.AddConfig("big", bulkhead.Config{MaxConcurrentCalls: 5}); err != nil {
		t.Fatal(err)
	}
	named, err := r.GetWithConfig("named", "big")
	if err != nil {
		t.Fatal(err)
	}
	named.TryAcquirePermission()
	named.FinishCall()
	configured, err := r.Configure("configured", bulkhead.Config{MaxConcurrentCalls: 1})
	if err != nil {
		t.Fatal(err)
	}
	configured.TryAcquirePermission()
	configured.TryAcquirePermission()
	configured.FinishCall()

	wantCounts(t, c, "late", callcount.Counts{Permitted: 1, Finished: 1})
	wantCounts(t, c, "named", callcount.Counts{Permitted: 1, Finished: 1})
	wantCounts(t, c, "configured", callcount.Counts{Permitted: 1, Rejected: 1, Finished: 1})
}

func TestCounterCountsExistingBulkheadsFromItsStart(t *testing.T) {
	r, err := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 1})
	if err != nil {
		panic(err)
	}
	testkit.CheckRegistry(t, r)
	s := mustRegistryBulkhead(t, r, "p")
	s.TryAcquirePermission() // before the counter: not counted
	c := callcount.New(r)
	defer c.Close()
	s.FinishCall()
	wantCounts(t, c, "p", callcount.Counts{Finished: 1})
}

func TestCounterIgnoresBulkheadsOutsideItsRegistry(t *testing.T) {
	r, c := newCountedRegistry(t, bulkhead.Config{MaxConcurrentCalls: 1})
	mustRegistryBulkhead(t, r, "p")
	stranger := newSemaphore(t, "p", bulkhead.Config{MaxConcurrentCalls: 1})
	stranger.TryAcquirePermission()
	stranger.FinishCall()
	wantCounts(t, c, "p", callcount.Counts{})
}

func TestCounterCloseStopsCountingAndKeepsCounts(t *testing.T) {
	r, c := newCountedRegistry(t, bulkhead.Config{MaxConcurrentCalls: 1})
	other := callcount.New(r)
	defer other.Close()
	s := mustRegistryBulkhead(t, r, "p")
	s.TryAcquirePermission()

	c.Close()
	c.Close() // idempotent
	s.FinishCall()
	later := mustRegistryBulkhead(t, r, "later")
	later.TryAcquirePermission()
	later.FinishCall()

	wantCounts(t, c, "p", callcount.Counts{Permitted: 1})
	wantCounts(t, c, "later", callcount.Counts{})
	// Closing one counter leaves the others counting.
	wantCounts(t, other, "p", callcount.Counts{Permitted: 1, Finished: 1})
	wantCounts(t, other, "later", callcount.Counts{Permitted: 1, Finished: 1})
}

func TestCounterStopsCountingRemovedBulkheadAndContinuesItsName(t *testing.T) {
	r, c := newCountedRegistry(t, bulkhead.Config{MaxConcurrentCalls: 1})
	old := mustRegistryBulkhead(t, r, "p")
	old.TryAcquirePermission()
	old.FinishCall()

	r.Remove("p")
	old.TryAcquirePermission() // no longer in the registry: not counted
	old.FinishCall()
	wantCounts(t, c, "p", callcount.Counts{Permitted: 1, Finished: 1})

	renewed := mustRegistryBulkhead(t, r, "p")
	renewed.TryAcquirePermission()
	renewed.TryAcquirePermission()
	renewed.FinishCall()
	wantCounts(t, c, "p", callcount.Counts{Permitted: 2, Rejected: 1, Finished: 2})
}

func TestNewPanicsOnANilSource(t *testing.T) {
	var nilRegistry *bulkhead.Registry
	for _, src := range []bulkhead.MetricsSource{nil, nilRegistry} {
		func() {
			defer func() {
				if r := recover(); r != "callcount: New called with a nil bulkhead.MetricsSource" {
					t.Fatalf("New(%#v) recovered %v", src, r)
				}
			}()
			callcount.New(src)
		}()
	}
}

func TestCounterCountsThePoolsOfAPoolRegistry(t *testing.T) {
	r, err := pool.NewRegistry(pool.Config{MaxWorkers: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close(context.Background()) })
	c := callcount.New(r.MetricsSource())
	defer c.Close()
	p, err := r.Get("resizer") // created after New: counted from its creation
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Submit(context.Background(), p, func(context.Context) (int, error) { return 1, nil }).Get(context.Background()); err != nil {
		t.Fatal(err)
	}
	wantCounts(t, c, "resizer", callcount.Counts{Permitted: 1, Finished: 1})
}

// tally is what the hammer's workers saw happen to one bulkhead.
// finishing counts the FinishCalls begun, finished those returned (see the
// reader's check of Finished against Permitted).
type tally struct{ permitted, rejected, finished, cancelled, finishing atomic.Uint64 }

// finish gives back a permit of s, counted in t.
func (t *tally) finish(s *bulkhead.Semaphore) {
	t.finishing.Add(1)
	s.FinishCall()
	t.finished.Add(1)
}

func (t *tally) counts() callcount.Counts {
	return callcount.Counts{
		Permitted: t.permitted.Load(), Rejected: t.rejected.Load(),
		Finished: t.finished.Load(), Cancelled: t.cancelled.Load(),
	}
}

// TestCounterHammerCountsEveryEventOnce races workers that create
// bulkheads (all after the counter), acquire, queue, cancel and complete,
// against readers of Counts. Every event must be counted exactly once under
// its bulkhead's name, from the bulkhead's first event; while the traffic
// runs, counts never go down and never show more finished than permitted
// calls, beyond the grants whose CallPermitted their granting FinishCall is
// still publishing.
func TestCounterHammerCountsEveryEventOnce(t *testing.T) {
	r, c := newCountedRegistry(t, bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Hour, MaxQueuedCalls: 1})
	// Many names, all hit first by every worker at once after start: the
	// first events of a name race to create its entry.
	var names []string
	tallies := map[string]*tally{}
	for i := range 64 {
		n := fmt.Sprintf("p%02d", i)
		names = append(names, n)
		tallies[n] = &tally{}
	}
	start := make(chan struct{})

	const workers, iterations = 4, 4000
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			<-start
			for i := range iterations {
				// Every worker on the same name for 8 iterations; the
				// first calls race to create it.
				name := names[(i/8)%len(names)]
				s, err := r.Get(name)
				if err != nil {
					t.Error(err)
					return
				}
				tl := tallies[name]
				if i%2 == 0 {
					if !s.TryAcquirePermission() {
						tl.rejected.Add(1)
						continue
					}
					tl.permitted.Add(1)
					runtime.Gosched() // hold the permit a while: others queue or are rejected
					tl.finish(s)
					continue
				}
				a := s.AcquirePermissionAsync()
				if errors.Is(a.Err(), bulkhead.ErrPending) && a.Cancel() {
					tl.cancelled.Add(1)
					continue
				}
				<-a.Done() // decided: granted at once, granted while we cancelled, or rejected
				if a.Err() != nil {
					tl.rejected.Add(1)
					continue
				}
				tl.permitted.Add(1)
				runtime.Gosched()
				tl.finish(s)
			}
		})
	}
	stop := make(chan struct{})
	var readers sync.WaitGroup
	readers.Go(func() {
		last := map[string]callcount.Counts{}
		for {
			for _, n := range names {
				// A queued call's CallPermitted is published by the
				// goroutine that granted it, inside its FinishCall, after
				// the outcome is visible (Semaphore.OnEvent): the granted
				// call may finish, and its CallFinished be counted, before
				// its CallPermitted is. Each CallPermitted so delayed
				// belongs to a FinishCall of n in progress while Counts
				// read: begun before the reading ended (finishing, read
				// after) and not returned before it began (finished, read
				// before). So Finished exceeds Permitted by at most the
				// difference (with no slack, the check failed 6 of 400
				// runs of this test under load).
				tl := tallies[n]
				returned := tl.finished.Load()
				got := c.Counts(n)
				inFinish := tl.finishing.Load() - returned
				if got.Finished > got.Permitted+inFinish {
					t.Errorf("%s: %+v shows more finished than permitted calls, beyond the %d FinishCalls in progress", n, got, inFinish)
				}
				prev := last[n]
				if got.Permitted < prev.Permitted || got.Rejected < prev.Rejected || got.Finished < prev.Finished || got.Cancelled < prev.Cancelled {
					t.Errorf("%s: counts went down from %+v to %+v", n, prev, got)
				}
				last[n] = got
			}
			select {
			case <-stop:
				return
			default:
				runtime.Gosched() // two cores: leave room for the workers
			}
		}
	})
	close(start)
	wg.Wait()
	close(stop)
	readers.Wait()

	var total uint64
	for _, n := range names {
		want := tallies[n].counts()
		wantCounts(t, c, n, want)
		total += want.Permitted + want.Rejected + want.Cancelled
	}
	if total != workers*iterations {
		t.Fatalf("workers saw %d outcomes, want %d", total, workers*iterations)
	}
}

// TestCounterRacingFirstEventsAreAllCounted releases goroutines at once
// on the first event of fresh bulkheads, so that they race to create the
// name's entry: no event may be lost to the race.
func TestCounterRacingFirstEventsAreAllCounted(t *testing.T) {
	r, c := newCountedRegistry(t, bulkhead.Config{MaxConcurrentCalls: 64})
	const rounds, racers = 300, 4
	for round := range rounds {
		name := fmt.Sprintf("fresh-%d", round)
		s := mustRegistryBulkhead(t, r, name)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for range racers {
			wg.Go(func() {
				<-start
				s.TryAcquirePermission()
			})
		}
		close(start)
		wg.Wait()
		wantCounts(t, c, name, callcount.Counts{Permitted: racers})
		for range racers {
			s.ReleasePermission()
		}
	}
}

// frozenClock is a Clock whose Now costs nothing, to isolate the cost of
// listeners from that of reading the time. It sets no timers.
type frozenClock struct{}

func (frozenClock) Now() time.Time { return time.Time{} }
func (frozenClock) AfterFunc(time.Duration, func()) bulkhead.Timer {
	panic("frozenClock: no timers")
}

// BenchmarkCounter measures what counting adds to TryAcquirePermission +
// FinishCall (two events per iteration) on one of 500 bulkheads: no
// listener at all, a Counter, and, as the floor a per-bulkhead hook
// could reach, a closure subscribed to the bulkhead directly that adds to
// its own atomic counter. With clock=real each event also reads the time;
// clock=frozen leaves the listener's own cost.
func BenchmarkCounter(b *testing.B) {
	clocks := map[string]bulkhead.Clock{"real": nil, "frozen": frozenClock{}}
	for _, clock := range []string{"real", "frozen"} {
		for _, mode := range []string{"none", "Counter", "closure"} {
			b.Run("clock="+clock+"/listener="+mode, func(b *testing.B) {
				var opts []bulkhead.RegistryOption
				if c := clocks[clock]; c != nil {
					opts = append(opts, bulkhead.WithSemaphoreOptions(bulkhead.WithClock(c)))
				}
				r, err := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 1 << 20}, opts...)
				if err != nil {
					panic(err)
				}
				for i := range 500 {
					if _, err := r.Get(fmt.Sprintf("partner-%03d", i)); err != nil {
						b.Fatal(err)
					}
				}
				s, _ := r.Find("partner-250")
				switch mode {
				case "Counter":
					c := callcount.New(r)
					defer c.Close()
				case "closure":
					var n atomic.Uint64
					defer s.OnEvent(func(bulkhead.Event) { n.Add(1) })()
				}
				b.Run("serial", func(b *testing.B) {
					b.ReportAllocs()
					for b.Loop() {
						s.TryAcquirePermission()
						s.FinishCall()
					}
				})
				b.Run("parallel", func(b *testing.B) {
					b.ReportAllocs()
					b.RunParallel(func(pb *testing.PB) {
						for pb.Next() {
							if s.TryAcquirePermission() {
								s.FinishCall()
							}
						}
					})
				})
			})
		}
	}
}

func TestCounterForgetsTheCountsOfAnEvictedBulkhead(t *testing.T) {
	clock := testkit.NewVirtualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	r, err := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 1},
		bulkhead.WithSemaphoreOptions(bulkhead.WithClock(clock)), bulkhead.WithIdleTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	testkit.CheckRegistry(t, r)
	c := callcount.New(r)
	defer c.Close()
	a, l := r.AcquirePermissionAsync("tenant", bulkhead.CallOptions{})
	if a.Err() != nil {
		t.Fatal(a.Err())
	}
	l.FinishCall()
	wantCounts(t, c, "tenant", callcount.Counts{Permitted: 1, Finished: 1})
	clock.Advance(2 * time.Second)
	wantCounts(t, c, "tenant", callcount.Counts{})
	a, l = r.AcquirePermissionAsync("tenant", bulkhead.CallOptions{})
	if a.Err() != nil {
		t.Fatal(a.Err())
	}
	l.ReleasePermission()
	wantCounts(t, c, "tenant", callcount.Counts{Permitted: 1})
}
