package bulkhead_test

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/testkit"
)

// TestStressKeyedAcquireEvictRecreateAndChangeConfig races keyed calls
// (the trio: granted at once, queued, expiring, cancelled, released from
// inside callbacks that re-enter the registry, held across other calls;
// TryAcquirePermission; AcquirePermission waiting in the caller) on a few
// keys, more keys than the cap, against the idle sweep on a virtual clock
// advanced by another goroutine, against ChangeConfig of whatever
// bulkheads exist, and against a Get that pins one of the keys in the
// middle of the run (its keyed users counted before the pin, and not
// after). An independent counter per admitting bulkhead name
// (the key, or the catch-all) checks that no key ever runs more calls than
// the largest limit it is configured with, even across an eviction and a
// re-creation; at the end every Acquisition has had exactly one outcome
// and every granted permit was given back exactly once.
//
// More seeds: go test -race -run TestStressKeyed -registry.seeds 50 .
func TestStressKeyedAcquireEvictRecreateAndChangeConfig(t *testing.T) {
	for seed := range uint64(*keyedStressSeeds) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) { stressKeyedRegistry(t, seed) })
	}
}

var keyedStressSeeds = flag.Int("registry.seeds", 3, "how many seeds TestStressKeyedAcquireEvictRecreateAndChangeConfig runs")

const (
	keyedStressWorkers = 4
	keyedStressOps     = 800
	keyedStressKeys    = 6 // more than the cap: the catch-all is in play
	keyedStressMax     = 3 // the largest limit ChangeConfig sets
)

func stressKeyedRegistry(t *testing.T, seed uint64) {
	clock := testkit.NewVirtualClock(epoch)
	cfg := bulkhead.Config{MaxConcurrentCalls: 2, MaxWaitDuration: 30 * time.Microsecond, MaxQueuedCalls: 2}
	r, err := bulkhead.NewRegistry(cfg, bulkhead.WithSemaphoreOptions(bulkhead.WithClock(clock)),
		bulkhead.WithIdleTimeout(20*time.Microsecond), bulkhead.WithMaxBulkheads(4, cfg))
	if err != nil {
		t.Fatal(err)
	}
	testkit.CheckRegistry(t, r)

	var mu sync.Mutex
	running := map[string]int{} // admitted calls per bulkhead name, independent of the registry
	var granted, givenBack atomic.Int64
	enterCall := func(name string) {
		mu.Lock()
		defer mu.Unlock()
		running[name]++
		if running[name] > keyedStressMax {
			t.Errorf("%s runs %d calls, more than any limit it had", name, running[name])
		}
	}
	leaveCall := func(name string) {
		mu.Lock()
		running[name]--
		mu.Unlock()
	}
	finish := func(l bulkhead.Lease, ran bool) {
		leaveCall(l.Name())
		givenBack.Add(1)
		if ran {
			l.FinishCall()
		} else {
			l.ReleasePermission()
		}
	}

	type call struct {
		a        *bulkhead.Acquisition
		outcomes atomic.Int32
		handled  atomic.Bool // its callback has returned
	}
	var all [keyedStressWorkers][]*call
	var workers, holders sync.WaitGroup
	stop := make(chan struct{})
	var background sync.WaitGroup
	background.Go(func() { // the clock: drives waits' expiry and the sweep
		for {
			select {
			case <-stop:
				return
			default:
				clock.Advance(5 * time.Microsecond)
			}
		}
	})
	background.Go(func() { // ChangeConfig on whatever exists, pinned or not
		rnd := rand.New(rand.NewPCG(seed, 99))
		for {
			select {
			case <-stop:
				return
			default:
			}
			for _, s := range r.All() {
				c := s.Config()
				c.MaxConcurrentCalls = 2 + rnd.IntN(keyedStressMax-1)
				if err := s.ChangeConfig(c); err != nil {
					t.Error(err)
				}
			}
		}
	})
	pinned := make(chan struct{}) // closed once Get pinned pinnedKey
	const pinnedKey = "k5"
	var progress atomic.Int64
	background.Go(func() { // Get pins pinnedKey once the run is under way
		defer close(pinned)
		for progress.Load() < keyedStressWorkers*keyedStressOps/2 {
			runtime.Gosched()
		}
		for {
			if _, err := r.Get(pinnedKey); err == nil {
				return
			}
			select {
			case <-stop:
				return
			default:
				runtime.Gosched()
			}
		}
	})
	for w := range keyedStressWorkers {
		workers.Go(func() {
			rnd := rand.New(rand.NewPCG(seed, uint64(w)))
			var held []bulkhead.Lease
			for range keyedStressOps {
				progress.Add(1)
				key := fmt.Sprint("k", rnd.IntN(keyedStressKeys))
				if form := rnd.IntN(5); form < 2 { // the synchronous forms
					var l bulkhead.Lease
					var err error
					if form == 0 {
						l, err = r.TryAcquirePermission(key, bulkhead.CallOptions{})
					} else {
						l, err = r.AcquirePermission(context.Background(), key, bulkhead.CallOptions{})
					}
					if err == nil {
						granted.Add(1)
						enterCall(l.Name())
						if rnd.IntN(2) == 0 {
							held = append(held, l)
						} else {
							finish(l, true)
						}
					}
					continue
				}
				a, l := r.AcquirePermissionAsync(key, bulkhead.CallOptions{})
				c := &call{a: a}
				all[w] = append(all[w], c)
				mode := rnd.IntN(4)
				hold := make(chan bulkhead.Lease, 1)
				a.OnDone(func(err error) {
					defer c.handled.Store(true)
					if c.outcomes.Add(1) != 1 {
						t.Error("an Acquisition had two outcomes")
					}
					if err != nil {
						return
					}
					granted.Add(1)
					enterCall(l.Name())
					switch mode {
					case 0: // hold it across later operations of this worker
						hold <- l
					case 1: // re-enter the registry from the callback
						inner, innerLease := r.AcquirePermissionAsync(key, bulkhead.CallOptions{})
						// A lost Cancel means another goroutine decided the
						// outcome; it is visible once Done is closed.
						if !inner.Cancel() && waitOutcome(inner) == nil {
							granted.Add(1)
							enterCall(innerLease.Name())
							finish(innerLease, false)
						}
						finish(l, true)
					default:
						finish(l, mode == 2)
					}
				})
				if mode == 3 && rnd.IntN(2) == 0 {
					a.Cancel()
				}
				select {
				case l := <-hold:
					held = append(held, l)
				default:
					if mode == 0 {
						// not granted yet: it will arrive on hold later, or never
						holders.Go(func() {
							select {
							case l := <-hold:
								finish(l, true)
							case <-a.Done():
								if a.Err() == nil {
									finish(<-hold, true)
								}
							}
						})
					}
				}
				if len(held) > 2 || (len(held) > 0 && rnd.IntN(3) == 0) {
					finish(held[0], true)
					held = held[1:]
				}
			}
			for _, l := range held {
				finish(l, false)
			}
		})
	}
	workers.Wait()
	close(stop)
	background.Wait()
	// Every queued call expires now (or was granted and is finished by its
	// holder goroutine).
	clock.Advance(time.Second)
	holders.Wait()
	// A grant's callback may run on a fresh goroutine that has started but
	// not returned yet (see Acquisition.OnDone): wait for every callback.
	for w := range all {
		for _, c := range all[w] {
			for !c.handled.Load() {
				runtime.Gosched()
			}
		}
	}
	if g, b := granted.Load(), givenBack.Load(); g != b {
		t.Fatalf("%d permits granted, %d given back", g, b)
	}
	for w := range all {
		for _, c := range all[w] {
			if n := c.outcomes.Load(); n != 1 {
				t.Fatalf("an Acquisition had %d outcomes", n)
			}
		}
	}
	clock.Advance(time.Second) // the sweep evicts every idle bulkhead
	if st := r.Stats(); st.Evictions == 0 || st.CatchAllCalls == 0 {
		t.Fatalf("the run evicted %d bulkheads and sent %d calls to the catch-all; want both exercised", st.Evictions, st.CatchAllCalls)
	}
	<-pinned
	want := []string{bulkhead.CatchAllName}
	if _, ok := r.Find(pinnedKey); ok {
		want = append(want, pinnedKey)
	}
	if got := names(r); !slices.Equal(got, want) {
		t.Fatalf("after the run and an idle second, the registry holds %v; want %v (the catch-all, and the key Get pinned)", got, want)
	}
}

func waitOutcome(a *bulkhead.Acquisition) error {
	<-a.Done()
	return a.Err()
}
