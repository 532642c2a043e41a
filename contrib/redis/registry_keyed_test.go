package redis_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/testkit"

	rxredis "github.com/rxbulkhead/bulkhead/contrib/redis"
)

// The fleet Registry is a source of the exporters (contrib/prometheus,
// contrib/otel) as the core Registry is.
var _ bulkhead.MetricsSource = (*rxredis.Registry)(nil)

// fleetKeys are the keys of the bulkhead name in Redis (scripts.go).
func fleetKeys(prefix, name string) []string {
	base := prefix + "{" + name + "}:"
	return []string{base + "leases", base + "queue", base + "alive", base + "seq", base + "config"}
}

// keyTouches counts the commands a client sends that name a substring.
type keyTouches struct {
	sub string
	n   atomic.Int64
}

func (h *keyTouches) DialHook(next goredis.DialHook) goredis.DialHook { return next }

func (h *keyTouches) count(cmd goredis.Cmder) {
	for _, a := range cmd.Args() {
		if s, ok := a.(string); ok && strings.Contains(s, h.sub) {
			h.n.Add(1)
			return
		}
	}
}

func (h *keyTouches) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		h.count(cmd)
		return next(ctx, cmd)
	}
}

func (h *keyTouches) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error {
		for _, c := range cmds {
			h.count(c)
		}
		return next(ctx, cmds)
	}
}

// advanceUntil advances clock by step until cond holds, at most n times.
func advanceUntil(t *testing.T, clock *testkit.VirtualClock, step time.Duration, n int, what string, cond func() bool) {
	t.Helper()
	for range n {
		if cond() {
			return
		}
		clock.Advance(step)
	}
	if !cond() {
		t.Fatalf("%s: not after %d advances of %v", what, n, step)
	}
}

// An evicted fleet bulkhead leaves the Store: no round trip names its keys
// any more, and every key it wrote expires in Redis by itself, even a
// leases set still holding the lease of a replica that crashed (no script
// runs to purge it). The key comes back through Acquire.
func TestAnEvictedFleetBulkheadStopsAndItsKeysExpireInRedis(t *testing.T) {
	srv := sharedServer(t)
	clock := testkit.NewVirtualClock(time.Now())
	cfg := rxredis.StoreConfig{KeyPrefix: prefixFor(t), LeaseTTL: time.Second, RenewInterval: 300 * time.Millisecond,
		TicketTTL: 500 * time.Millisecond, PollInterval: 50 * time.Millisecond, Timeout: time.Second, ProbeInterval: 50 * time.Millisecond, Clock: clock}
	c := srv.client(t) // the test's own commands
	sc := srv.client(t)
	touches := &keyTouches{sub: "{tenant}"}
	sc.AddHook(touches)
	flushKeys(t, c, cfg.KeyPrefix)
	s, err := rxredis.NewStore(sc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	reg, err := rxredis.NewRegistry(s, fleetConfig(2, 10*time.Second), rxredis.WithIdleTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var evicted []string
	var mu sync.Mutex
	reg.OnEvict(func(name string) { mu.Lock(); evicted = append(evicted, name); mu.Unlock() })

	// A replica that crashed holding a lease, written without a key TTL
	// (as by an older version): it takes one of the two permits.
	ctx := context.Background()
	keys := fleetKeys(cfg.KeyPrefix, "tenant")
	now, err := c.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	c.ZAdd(ctx, keys[0], goredis.Z{Score: float64(now.Add(800 * time.Millisecond).UnixMilli()), Member: "crashed"})

	first := reg.Acquire("tenant", bulkhead.CallOptions{})
	if err := await(t, first.Acquisition()); err != nil {
		t.Fatal(err)
	}
	second := reg.Acquire("tenant", bulkhead.CallOptions{}) // waits for a ticket's turn
	eventually(t, outcomeTimeout, "second call queued in Redis", func() bool { return c.ZCard(ctx, keys[1]).Val() == 1 })
	first.Finish()
	if err := await(t, second.Acquisition()); err != nil {
		t.Fatal(err)
	}
	if second.Name() != "tenant" {
		t.Errorf("Permit.Name %q, want tenant", second.Name())
	}
	second.Release()
	all := reg.All() // a handle kept past the eviction (All does not pin)
	if len(all) != 1 || all[0].Name() != "tenant" {
		t.Fatalf("All() = %v, want the tenant's bulkhead", all)
	}
	held := all[0]

	advanceUntil(t, clock, 500*time.Millisecond, 10, "eviction", func() bool { return reg.Stats().Evictions == 1 })
	mu.Lock()
	if !slices.Equal(evicted, []string{"tenant"}) {
		t.Errorf("OnEvict saw %v, want [tenant]", evicted)
	}
	mu.Unlock()
	if _, ok := reg.Find("tenant"); ok {
		t.Error("Find still finds the evicted bulkhead")
	}
	if st := reg.Stats(); st.Bulkheads != 0 {
		t.Errorf("Stats %+v after the eviction, want no bulkhead", st)
	}
	// Every key that is left has a TTL: nobody has to delete it.
	for _, k := range keys {
		if ttl := c.PTTL(ctx, k).Val(); ttl == -1 {
			t.Errorf("key %s has no TTL after the eviction", k)
		}
	}
	time.Sleep(50 * time.Millisecond) // the eviction's own flush, if any
	before := touches.n.Load()
	// A change through the evicted handle would write a config key that
	// nobody renews: it is refused, naming the eviction, and sends nothing.
	raised := held.Config()
	raised.MaxConcurrentCalls = 3
	if err := held.ChangeConfig(ctx, raised); !errors.Is(err, rxredis.ErrClosed) || !strings.Contains(err.Error(), "evicted") {
		t.Errorf("ChangeConfig on the evicted bulkhead: %v, want an error matching ErrClosed that says it was evicted", err)
	}
	eventually(t, 5*time.Second, "every key of the evicted bulkhead expired", func() bool {
		return c.Exists(ctx, keys...).Val() == 0
	})
	if n := touches.n.Load() - before; n != 0 {
		t.Errorf("%d commands named the evicted bulkhead's keys after its eviction", n)
	}

	again := reg.Acquire("tenant", bulkhead.CallOptions{})
	if err := await(t, again.Acquisition()); err != nil {
		t.Fatalf("a keyed call after the eviction: %v", err)
	}
	if m, _ := reg.Find("tenant"); m == nil || m.Metrics().InFlightCalls != 1 {
		t.Error("the key's new bulkhead does not hold the new call's permit")
	}
	again.Finish()
}

// The cap: keys beyond it share the catch-all fleet bulkhead, counted in
// Stats; Get of a new name fails with ErrRegistryFull; an eviction makes
// room again.
func TestRegistryCapSendsNewKeysToTheCatchAll(t *testing.T) {
	clock := testkit.NewVirtualClock(time.Now())
	cfg := fastStore()
	cfg.Clock = clock
	s, _ := newStore(t, sharedServer(t), cfg)
	reg, err := rxredis.NewRegistry(s, fleetConfig(3, 0),
		rxredis.WithMaxBulkheads(2, fleetConfig(1, 0)), rxredis.WithIdleTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	testkit.CheckPermits(t, reg.All()...)
	var held []*rxredis.Permit
	for _, key := range []string{"a", "b", "c", "d"} {
		p := reg.Acquire(key, bulkhead.CallOptions{})
		err := await(t, p.Acquisition())
		want := key
		if key >= "c" {
			want = bulkhead.CatchAllName
		}
		if p.Name() != want {
			t.Errorf("key %s went to %q, want %q", key, p.Name(), want)
		}
		if key == "d" {
			// The catch-all has 1 permit, which c holds.
			if !errors.Is(err, bulkhead.ErrBulkheadFull) {
				t.Errorf("key d on the full catch-all: %v, want a full rejection", err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("key %s: %v", key, err)
		}
		held = append(held, p)
	}
	if st := reg.Stats(); st.Bulkheads != 3 || st.CatchAllCalls != 2 {
		t.Errorf("Stats %+v, want 3 bulkheads (a, b, catch-all) and 2 catch-all calls", st)
	}
	if _, err := reg.Get("e"); !errors.Is(err, bulkhead.ErrRegistryFull) {
		t.Errorf("Get of a new name when full: %v, want ErrRegistryFull", err)
	}
	var names []string
	for name := range reg.AllMetrics() {
		names = append(names, name)
	}
	if !slices.Equal(names, []string{"a", "b", bulkhead.CatchAllName}) {
		t.Errorf("AllMetrics names %v", names)
	}
	for _, p := range held {
		p.Finish()
	}
	advanceUntil(t, clock, 500*time.Millisecond, 10, "a and b evicted", func() bool { return reg.Stats().Evictions == 2 })
	p := reg.Acquire("c", bulkhead.CallOptions{})
	if err := await(t, p.Acquisition()); err != nil || p.Name() != "c" {
		t.Errorf("after the evictions key c went to %q (%v), want its own bulkhead", p.Name(), err)
	}
	if err == nil {
		p.Finish()
	}
	if st := reg.Stats(); st.Bulkheads != 2 || st.Evictions != 2 {
		t.Errorf("Stats %+v, want c and the catch-all, 2 evictions", st)
	}
}

func TestRegistryKeyedBadInputIsNamed(t *testing.T) {
	s, _ := newStore(t, sharedServer(t), fastStore())
	for _, tc := range []struct {
		opt  rxredis.RegistryOption
		want string
	}{
		{rxredis.WithIdleTimeout(0), "idle timeout must be positive"},
		{rxredis.WithIdleTimeout(-time.Second), "idle timeout must be positive"},
		{rxredis.WithMaxBulkheads(0, fleetConfig(1, 0)), "max must be at least 1"},
		{rxredis.WithMaxBulkheads(1, fleetConfig(0, 0)), `"catch-all"`},
		{rxredis.WithKeyConfig(nil), "configName func must not be nil"},
		{nil, "nil RegistryOption"},
	} {
		if _, err := rxredis.NewRegistry(s, fleetConfig(1, 0), tc.opt); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("NewRegistry: %v, want an error containing %q", err, tc.want)
		}
	}
	reg, err := rxredis.NewRegistry(s, fleetConfig(1, 0), rxredis.WithKeyConfig(func(key string) string { return "tier-" + key }))
	if err != nil {
		t.Fatal(err)
	}
	p := reg.Acquire("", bulkhead.CallOptions{})
	if err := p.Acquisition().Err(); err == nil || !strings.Contains(err.Error(), "key must not be empty") {
		t.Errorf("empty key: %v", err)
	}
	if p.Name() != "" {
		t.Errorf("Name of a call rejected before any bulkhead: %q", p.Name())
	}
	if _, ok := p.Lease(); ok || p.Lost() {
		t.Error("a call rejected before any bulkhead has a lease")
	}
	func() {
		defer func() {
			if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "never granted") {
				t.Errorf("Finish of a rejected keyed call: panic %v", r)
			}
		}()
		p.Finish()
	}()
	p = reg.Acquire("gold", bulkhead.CallOptions{})
	if err := p.Acquisition().Err(); err == nil || !strings.Contains(err.Error(), `unknown config "tier-gold"`) {
		t.Errorf("unknown key config: %v", err)
	}
	p = reg.Acquire("gold", bulkhead.CallOptions{ConfigName: "nope"})
	if err := p.Acquisition().Err(); err == nil || !strings.Contains(err.Error(), `unknown config "nope"`) {
		t.Errorf("unknown config: %v", err)
	}
}

// A bulkhead held by a keyed call (granted or waiting) is never evicted;
// one from Get is pinned; one from All used after its eviction rejects.
func TestEvictionSkipsBusyAndPinnedBulkheads(t *testing.T) {
	clock := testkit.NewVirtualClock(time.Now())
	cfg := fastStore()
	cfg.Clock = clock
	s, _ := newStore(t, sharedServer(t), cfg)
	reg, err := rxredis.NewRegistry(s, fleetConfig(1, time.Hour), rxredis.WithIdleTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	pinned, err := reg.Get("pinned")
	if err != nil {
		t.Fatal(err)
	}
	testkit.CheckPermits(t, pinned)
	held := reg.Acquire("busy", bulkhead.CallOptions{})
	if err := await(t, held.Acquisition()); err != nil {
		t.Fatal(err)
	}
	waiting := reg.Acquire("busy", bulkhead.CallOptions{})
	idle := reg.Acquire("idle", bulkhead.CallOptions{})
	if err := await(t, idle.Acquisition()); err != nil {
		t.Fatal(err)
	}
	stale := reg.All()[0] // "busy"
	idle.Finish()
	advanceUntil(t, clock, 500*time.Millisecond, 10, "idle evicted", func() bool { return reg.Stats().Evictions == 1 })
	for range 6 {
		clock.Advance(500 * time.Millisecond)
	}
	if st := reg.Stats(); st.Evictions != 1 || st.Bulkheads != 2 {
		t.Fatalf("Stats %+v: only idle may go", st)
	}
	if waiting.Acquisition().Err() != bulkhead.ErrPending {
		t.Fatalf("the waiting call was decided: %v", waiting.Acquisition().Err())
	}
	held.Finish()
	if err := await(t, waiting.Acquisition()); err != nil {
		t.Fatal(err)
	}
	waiting.Finish()
	advanceUntil(t, clock, 500*time.Millisecond, 10, "busy evicted once idle", func() bool { return reg.Stats().Evictions == 2 })
	if a := stale.AcquirePermissionAsync(); !errors.Is(await(t, a), rxredis.ErrClosed) || !strings.Contains(a.Err().Error(), "evicted") {
		t.Errorf("a call through an evicted bulkhead: %v, want a rejection naming the eviction", a.Err())
	}
	if _, ok := reg.Find("pinned"); !ok {
		t.Error("the pinned bulkhead was evicted")
	}
}

// The fleet Registry's events for the exporters: OnEvent reaches present
// and future bulkheads and its remove unsubscribes everywhere; Event.Wait
// is set for calls decided after a round trip; the fleet's own rejections
// carry Reason Unavailable.
func TestRegistryEventsCarryWaitAndReasonAndRemoveUnsubscribes(t *testing.T) {
	srv := withServer(t)
	s, _ := newStore(t, srv, fastStore())
	reg, err := rxredis.NewRegistry(s, fleetConfig(1, 150*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var seen []bulkhead.Event
	remove := reg.OnEvent(func(e bulkhead.Event) { mu.Lock(); seen = append(seen, e); mu.Unlock() })
	events := func() []bulkhead.Event { mu.Lock(); defer mu.Unlock(); return slices.Clone(seen) }
	p := reg.Acquire("k", bulkhead.CallOptions{})
	if err := await(t, p.Acquisition()); err != nil {
		t.Fatal(err)
	}
	timedOut := reg.Acquire("k", bulkhead.CallOptions{})
	if err := await(t, timedOut.Acquisition()); !errors.Is(err, bulkhead.ErrBulkheadFull) {
		t.Fatalf("second call: %v, want a wait timeout", err)
	}
	p.Finish()
	eventually(t, outcomeTimeout, "three events", func() bool { return len(events()) == 3 })
	ev := events()
	if ev[0].Type != bulkhead.CallPermitted || ev[0].Wait <= 0 {
		t.Errorf("grant after a round trip: %+v, want CallPermitted with a Wait", ev[0])
	}
	if ev[1].Type != bulkhead.CallRejected || ev[1].Reason != bulkhead.WaitTimeout || ev[1].Wait < 150*time.Millisecond {
		t.Errorf("timed-out call: %+v, want WaitTimeout after at least 150ms", ev[1])
	}
	if ev[2].Type != bulkhead.CallFinished {
		t.Errorf("third event %+v, want CallFinished", ev[2])
	}
	srv.Kill()
	down := reg.Acquire("k", bulkhead.CallOptions{})
	if err := await(t, down.Acquisition()); !errors.Is(err, rxredis.ErrUnavailable) {
		t.Fatalf("with Redis away: %v", err)
	}
	eventually(t, outcomeTimeout, "the rejection's event", func() bool { return len(events()) == 4 })
	if e := events()[3]; e.Type != bulkhead.CallRejected || e.Reason != bulkhead.Unavailable {
		t.Errorf("a rejection for Redis away: %+v, want CallRejected with Reason Unavailable", e)
	}
	remove()
	remove()
	late := reg.Acquire("other", bulkhead.CallOptions{})
	await(t, late.Acquisition())
	if n := len(events()); n != 4 {
		t.Errorf("%d events after remove, want 4", n)
	}
}

// Keyed calls, evictions and re-creations race on a few keys, with
// cancels, wait timeouts (on the virtual clock a goroutine advances) and
// callbacks that re-enter the registry: no key ever has more holders than
// its limit in this process (an independent counter), every call gets
// exactly one outcome, and every permit comes back. With Redis up
// (leases) and with Redis away under FailOver (local semaphores only:
// there, two bulkheads of one key would both admit).
func TestStressEvictionRacingKeyedCallsNeverOverAdmitsOrLosesAPermit(t *testing.T) {
	for _, redisUp := range []bool{true, false} {
		t.Run(map[bool]string{true: "redis", false: "failover"}[redisUp], func(t *testing.T) {
			stressEviction(t, redisUp)
		})
	}
}

func stressEviction(t *testing.T, redisUp bool) {
	const limit, keys = 1, 6
	clock := testkit.NewVirtualClock(time.Now())
	cfg := fastStore()
	cfg.Clock = clock
	var s *rxredis.Store
	var c *goredis.Client
	if redisUp {
		s, c = newStore(t, sharedServer(t), cfg)
	} else {
		port, err := freePort() // nothing listens there
		if err != nil {
			t.Fatal(err)
		}
		c = goredis.NewClient(&goredis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", port), MaxRetries: -1, DialTimeout: 100 * time.Millisecond})
		t.Cleanup(func() { c.Close() })
		cfg.KeyPrefix = prefixFor(t)
		var err2 error
		if s, err2 = rxredis.NewStore(c, cfg); err2 != nil {
			t.Fatal(err2)
		}
		t.Cleanup(func() { s.Close() })
	}
	bc := fleetConfig(limit, 30*time.Millisecond)
	bc.MaxQueuedCalls = 8
	if !redisUp {
		bc.Unreachable, bc.LocalFraction = rxredis.FailOver, 1
	}
	reg, err := rxredis.NewRegistry(s, bc, rxredis.WithIdleTimeout(20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	var holders [keys]atomic.Int64
	var over, outcomes, calls atomic.Int64
	stop := make(chan struct{})
	var advancer sync.WaitGroup
	advancer.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			clock.Advance(5 * time.Millisecond)
			time.Sleep(200 * time.Microsecond)
		}
	})
	start := time.Now()
	deadline := start.Add(soak(1500 * time.Millisecond))
	var wg sync.WaitGroup
	var all sync.Map // *rxredis.Permit -> struct{}
	for g := range 10 {
		rng := rand.New(rand.NewPCG(11, uint64(g)))
		wg.Go(func() {
			for time.Now().Before(deadline) {
				// Two hot keys at a time, moving on every 100ms: the
				// others go idle, are evicted and come back; now and
				// then a call for any key, perhaps one just evicted.
				k := (rng.IntN(2) + int(time.Since(start)/(100*time.Millisecond))) % keys
				if rng.IntN(8) == 0 {
					k = rng.IntN(keys)
				}
				key := "k" + fmt.Sprint(k)
				p := reg.Acquire(key, bulkhead.CallOptions{})
				calls.Add(1)
				all.Store(p, struct{}{})
				var once atomic.Int32
				reenter := rng.IntN(4) == 0
				p.Acquisition().OnDone(func(err error) {
					if once.Add(1) != 1 {
						t.Error("a callback ran twice")
					}
					outcomes.Add(1)
					if reenter {
						// Re-enter the registry from the delivering goroutine.
						q := reg.Acquire("k"+fmt.Sprint((k+1)%keys), bulkhead.CallOptions{})
						q.Acquisition().OnDone(func(err error) {
							if err == nil {
								q.Release()
							}
						})
						q.Acquisition().Cancel()
					}
				})
				switch rng.IntN(5) {
				case 0:
					p.Acquisition().Cancel()
				}
				select {
				case <-p.Acquisition().Done():
				case <-time.After(outcomeTimeout):
					t.Errorf("no outcome for a call of %s within %v", key, outcomeTimeout)
					return
				}
				if p.Acquisition().Err() != nil {
					continue
				}
				if n := holders[k].Add(1); n > limit {
					over.Add(1)
				}
				switch rng.IntN(10) {
				case 0: // held across sweeps (virtual time runs 25x faster)
					time.Sleep(2 * time.Millisecond)
				case 1, 2, 3:
					time.Sleep(time.Duration(rng.IntN(300)) * time.Microsecond)
				}
				holders[k].Add(-1)
				if rng.IntN(2) == 0 {
					p.Finish()
				} else {
					p.Release()
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	advancer.Wait()
	if over.Load() != 0 {
		t.Errorf("a key had more than %d holders %d times", limit, over.Load())
	}
	eventually(t, outcomeTimeout, "every callback ran", func() bool { return outcomes.Load() >= calls.Load() })
	all.Range(func(k, _ any) bool {
		if err := k.(*rxredis.Permit).Acquisition().Err(); err == bulkhead.ErrPending {
			t.Error("a call never reached an outcome")
			return false
		}
		return true
	})
	if reg.Stats().Evictions == 0 {
		t.Error("no eviction happened: the stress did not race evictions")
	}
	for _, b := range reg.All() {
		if m := b.Metrics(); m.InFlightCalls != 0 || m.QueuedCalls != 0 {
			t.Errorf("%s: %+v after every call ended", b.Name(), m)
		}
	}
	if redisUp {
		ctx := context.Background()
		for k := range keys {
			eventually(t, outcomeTimeout, "no lease or ticket left", func() bool {
				n := 0
				for _, key := range fleetKeys(prefixFor(t), "k"+fmt.Sprint(k))[:2] {
					n += int(c.ZCard(ctx, key).Val())
				}
				return n == 0
			})
		}
	}
	t.Logf("%d calls, %d evictions", calls.Load(), reg.Stats().Evictions)
}
