package redis_test

import (
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/testkit"

	rxredis "github.com/rxbulkhead/bulkhead/contrib/redis"
)

// fleetNames are the names of reg's bulkheads, the catch-all included.
func fleetNames(reg *rxredis.Registry) []string {
	var names []string
	for name := range reg.AllMetrics() {
		names = append(names, name)
	}
	return names
}

// acquireNow acquires a permit for key and fails the test unless it is
// granted by the bulkhead named want.
func acquireNow(t *testing.T, reg *rxredis.Registry, key, want string) *rxredis.Permit {
	t.Helper()
	p := reg.Acquire(key, bulkhead.CallOptions{})
	if err := await(t, p.Acquisition()); err != nil {
		t.Fatalf("key of %d bytes: %.200v", len(key), err)
	}
	if p.Name() != want {
		t.Errorf("key of %d bytes went to %.20q, want %.20q", len(key), p.Name(), want)
	}
	return p
}

// A key longer than the registry's maximum key length that has no bulkhead
// goes to the catch-all, by default at bulkhead.DefaultMaxKeyLength bytes:
// a flood of megabyte keys (a header, a client id) neither grows the
// registry by their length nor names keys of that length in Redis. A long
// name from Get is not bound, and a key that has a bulkhead uses it. (The
// fleet Registry created a bulkhead per long key before.)
func TestLongKeysWithoutAFleetBulkheadGoToTheCatchAll(t *testing.T) {
	s, _ := newStore(t, sharedServer(t), fastStore())
	reg, err := rxredis.NewRegistry(s, fleetConfig(2, 0), rxredis.WithMaxBulkheads(10, fleetConfig(2, 0)))
	if err != nil {
		t.Fatal(err)
	}
	testkit.CheckPermits(t, reg.All()...)
	atMax := strings.Repeat("k", bulkhead.DefaultMaxKeyLength)
	long := strings.Repeat("x", 1<<20)
	pinned := strings.Repeat("p", bulkhead.DefaultMaxKeyLength+1)
	if _, err := reg.Get(pinned); err != nil {
		t.Fatalf("Get of a long name: %v", err)
	}
	for _, tc := range []struct{ key, want string }{
		{atMax, atMax},
		{long, bulkhead.CatchAllName},
		{long + "2", bulkhead.CatchAllName},
		{pinned, pinned},
	} {
		acquireNow(t, reg, tc.key, tc.want).Finish()
	}
	if st := reg.Stats(); st.Bulkheads != 3 || st.CatchAllCalls != 2 {
		t.Errorf("Stats %+v, want 3 bulkheads (the 256-byte key, the pinned name, the catch-all) and 2 catch-all calls", st)
	}

	cfg := fastStore()
	cfg.KeyPrefix = prefixFor(t) + "short:"
	s2, _ := newStore(t, sharedServer(t), cfg) // a Store has one catch-all
	short, err := rxredis.NewRegistry(s2, fleetConfig(2, 0),
		rxredis.WithMaxBulkheads(10, fleetConfig(2, 0)), rxredis.WithMaxKeyLength(3), rxredis.WithConfig("other", fleetConfig(1, 0)))
	if err != nil {
		t.Fatal(err)
	}
	testkit.CheckPermits(t, short.All()...)
	acquireNow(t, short, "abc", "abc").Finish()
	acquireNow(t, short, "abcd", bulkhead.CatchAllName).Finish()
	// Naming a configuration does not lift the bound.
	p := short.Acquire("abcde", bulkhead.CallOptions{ConfigName: "other"})
	if err := await(t, p.Acquisition()); err != nil || p.Name() != bulkhead.CatchAllName {
		t.Fatalf("a long key with a ConfigName went to %q (%v), want the catch-all", p.Name(), err)
	}
	p.Finish()
	if got := fleetNames(short); !slices.Equal(got, []string{"abc", bulkhead.CatchAllName}) {
		t.Errorf("bulkheads %q, want abc and the catch-all", got)
	}
}

// WithMaxKeyLength's bad input is named, as the core's.
func TestFleetMaxKeyLengthBadInputIsNamed(t *testing.T) {
	s, _ := newStore(t, sharedServer(t), fastStore())
	for _, tc := range []struct {
		opts []rxredis.RegistryOption
		want string
	}{
		{[]rxredis.RegistryOption{rxredis.WithMaxBulkheads(1, fleetConfig(1, 0)), rxredis.WithMaxKeyLength(0)}, "WithMaxKeyLength: length must be at least 1, got 0"},
		{[]rxredis.RegistryOption{rxredis.WithMaxBulkheads(1, fleetConfig(1, 0)), rxredis.WithMaxKeyLength(-5)}, "got -5"},
		{[]rxredis.RegistryOption{rxredis.WithMaxKeyLength(10)}, "WithMaxKeyLength needs WithMaxBulkheads"},
	} {
		if _, err := rxredis.NewRegistry(s, fleetConfig(1, 0), tc.opts...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("NewRegistry: %v, want an error containing %q", err, tc.want)
		}
	}
}

// WithKeyConfig's func runs without the registry's lock: it may call into
// the registry (Find, Stats, even a keyed call of another key) without
// deadlocking it, and its choice is used for the new bulkhead. (The doc
// said it ran under the lock and must not; the catalog runs it outside
// since the keyed merge.)
func TestFleetKeyConfigFuncMayCallIntoTheRegistry(t *testing.T) {
	s, _ := newStore(t, sharedServer(t), fastStore())
	var reg *rxredis.Registry
	r, err := rxredis.NewRegistry(s, fleetConfig(1, 0),
		rxredis.WithConfig("gold", fleetConfig(5, 0)),
		rxredis.WithKeyConfig(func(key string) string {
			_ = reg.Stats()
			if _, ok := reg.Find("tier/" + key); ok {
				return "gold"
			}
			if key == "nested" {
				q := reg.Acquire("inner", bulkhead.CallOptions{ConfigName: bulkhead.DefaultConfigName})
				q.Acquisition().OnDone(func(err error) {
					if err == nil {
						q.Finish()
					}
				})
			}
			return bulkhead.DefaultConfigName
		}))
	if err != nil {
		t.Fatal(err)
	}
	reg = r
	testkit.CheckPermits(t, r.All()...)
	if _, err := r.Get("tier/acme"); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, key := range []string{"acme", "nested", "bob"} {
			p := r.Acquire(key, bulkhead.CallOptions{})
			if err := await(t, p.Acquisition()); err != nil {
				t.Errorf("%s: %v", key, err)
				continue
			}
			p.Finish()
		}
	}()
	select {
	case <-done:
	case <-time.After(outcomeTimeout):
		t.Fatal("a key-config func that calls into the registry deadlocked it")
	}
	limits := map[string]int{}
	for _, b := range r.All() {
		limits[b.Name()] = b.Config().MaxConcurrentCalls
	}
	want := map[string]int{"tier/acme": 1, "acme": 5, "nested": 1, "inner": 1, "bob": 1}
	if len(limits) != len(want) {
		t.Fatalf("bulkheads %v, want %v", limits, want)
	}
	for name, n := range want {
		if limits[name] != n {
			t.Errorf("bulkheads %v, want %v", limits, want)
			break
		}
	}
}

// A key-config func that panics or calls runtime.Goexit ends Acquire on
// its caller's goroutine; the registry holds nothing for the call (no
// bulkhead, nothing to evict or to wait for) and goes on.
func TestFleetKeyConfigFuncThatPanicsOrExitsLeavesNothingHeld(t *testing.T) {
	clock := testkit.NewVirtualClock(time.Now())
	cfg := fastStore()
	cfg.Clock = clock
	s, _ := newStore(t, sharedServer(t), cfg)
	reg, err := rxredis.NewRegistry(s, fleetConfig(1, 0), rxredis.WithIdleTimeout(time.Second),
		rxredis.WithKeyConfig(func(key string) string {
			switch key {
			case "panics":
				panic("key-config bug")
			case "exits":
				runtime.Goexit()
			}
			return bulkhead.DefaultConfigName
		}))
	if err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]any{"panics": "key-config bug", "exits": testkit.Goexited} {
		if got := testkit.RunToEnd(func() { reg.Acquire(key, bulkhead.CallOptions{}) }); got != want {
			t.Errorf("Acquire(%q) ended with %v, want %v", key, got, want)
		}
	}
	if got := fleetNames(reg); len(got) != 0 {
		t.Errorf("bulkheads %q after key-config funcs that failed, want none", got)
	}
	acquireNow(t, reg, "fine", "fine").Finish() // nothing was left locked
	advanceUntil(t, clock, 500*time.Millisecond, 10, "fine evicted", func() bool { return reg.Stats().Evictions == 1 })
	if st := reg.Stats(); st.Bulkheads != 0 {
		t.Errorf("Stats %+v after the eviction, want no bulkhead", st)
	}
}

// A ConfigName that names no configuration fails the call below the cap;
// at the cap a key without a bulkhead goes to the catch-all without its
// ConfigName being looked at (as in the core Registry: the catalog sends
// it there before it resolves the configuration).
func TestFleetUnknownConfigNameAtTheCapGoesToTheCatchAll(t *testing.T) {
	s, _ := newStore(t, sharedServer(t), fastStore())
	reg, err := rxredis.NewRegistry(s, fleetConfig(1, 0), rxredis.WithMaxBulkheads(1, fleetConfig(1, 0)))
	if err != nil {
		t.Fatal(err)
	}
	testkit.CheckPermits(t, reg.All()...)
	p := reg.Acquire("a", bulkhead.CallOptions{ConfigName: "nope"})
	if err := p.Acquisition().Err(); err == nil || !strings.Contains(err.Error(), `unknown config "nope"`) {
		t.Errorf("below the cap: %v, want the unknown configuration named", err)
	}
	acquireNow(t, reg, "a", "a").Finish()
	p = reg.Acquire("b", bulkhead.CallOptions{ConfigName: "nope"})
	if err := await(t, p.Acquisition()); err != nil || p.Name() != bulkhead.CatchAllName {
		t.Fatalf("at the cap: %q (%v), want the catch-all", p.Name(), err)
	}
	p.Finish()
}

// A CallPermitted listener that cancels the very keyed call it is told
// about (re-entering from the delivery goroutine): the fleet publishes
// CallPermitted before it decides the grant, so that Cancel wins (unlike a
// Semaphore's, which has decided by then): the call ends ErrCancelled,
// CallCancelled follows, the permit goes back (no leak, in this process or
// in Redis) and the registry lets go of the bulkhead, which is evicted.
func TestACallPermittedListenerThatCancelsItsCallLeavesNothingHeld(t *testing.T) {
	clock := testkit.NewVirtualClock(time.Now())
	cfg := fastStore()
	cfg.Clock = clock
	s, _ := newStore(t, sharedServer(t), cfg)
	reg, err := rxredis.NewRegistry(s, fleetConfig(1, 0), rxredis.WithIdleTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu     sync.Mutex
		seen   []bulkhead.EventType
		cur    = make(chan *rxredis.Permit, 1)
		won    = make(chan bool, 1)
		cancel atomic.Bool
	)
	cancel.Store(true)
	defer reg.OnEvent(func(e bulkhead.Event) {
		mu.Lock()
		seen = append(seen, e.Type)
		mu.Unlock()
		if e.Type == bulkhead.CallPermitted && cancel.CompareAndSwap(true, false) {
			p := <-cur
			won <- p.Acquisition().Cancel()
		}
	})()
	p := reg.Acquire("k", bulkhead.CallOptions{})
	cur <- p
	if err := await(t, p.Acquisition()); err != bulkhead.ErrCancelled {
		t.Fatalf("outcome %v, want ErrCancelled", err)
	}
	if !<-won {
		t.Error("Cancel from the CallPermitted listener lost; the fleet publishes before it decides")
	}
	mu.Lock()
	got := slices.Clone(seen)
	mu.Unlock()
	if !slices.Equal(got, []bulkhead.EventType{bulkhead.CallPermitted, bulkhead.CallCancelled}) {
		t.Errorf("events %v, want permitted then cancelled", got)
	}
	all := reg.All() // does not pin
	if len(all) != 1 {
		t.Fatalf("bulkheads %v, want k's", fleetNames(reg))
	}
	b := all[0]
	eventually(t, outcomeTimeout, "the cancelled grant given back", func() bool { return b.Metrics().InFlightCalls == 0 })
	// The permit is free for the next call.
	q := reg.Acquire("k", bulkhead.CallOptions{})
	if err := await(t, q.Acquisition()); err != nil {
		t.Fatalf("the next call: %v", err)
	}
	q.Finish()
	advanceUntil(t, clock, 500*time.Millisecond, 10, "k evicted", func() bool { return reg.Stats().Evictions == 1 })
}
