package redis_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/rxbulkhead/bulkhead"
	"go.uber.org/goleak"

	rxredis "github.com/rxbulkhead/bulkhead/contrib/redis"
)

// storeEvents records the events of a Store.
type storeEvents struct {
	mu  sync.Mutex
	evs []rxredis.StoreEvent
}

func recordStoreEvents(s *rxredis.Store) *storeEvents {
	r := &storeEvents{}
	s.OnEvent(func(e rxredis.StoreEvent) {
		r.mu.Lock()
		r.evs = append(r.evs, e)
		r.mu.Unlock()
	})
	return r
}

func (r *storeEvents) count(t rxredis.StoreEventType) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, e := range r.evs {
		if e.Type == t {
			n++
		}
	}
	return n
}

func (r *storeEvents) first(t rxredis.StoreEventType) (rxredis.StoreEvent, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.evs {
		if e.Type == t {
			return e, true
		}
	}
	return rxredis.StoreEvent{}, false
}

// Regression (issue 21, item 1): go-redis ignores context deadlines unless
// ContextTimeoutEnabled is set, so with long client timeouts a round trip
// against a SIGSTOPped server took ReadTimeout: a waiting FailClosed call
// got a wait-timeout *FullError instead of ErrUnavailable, and Close
// blocked for seconds.
func TestAStalledRedisIsNoticedWithinTimeoutWhateverTheClientsTimeouts(t *testing.T) {
	withAndWithoutContextTimeouts(t, testStalledRedisIsNoticedWithinTimeout)
}

// withAndWithoutContextTimeouts runs test as two subtests, with the
// client's Options.ContextTimeoutEnabled false (go-redis ignores context
// deadlines) and true.
func withAndWithoutContextTimeouts(t *testing.T, test func(t *testing.T, ctxTimeouts bool)) {
	for _, ctxTimeouts := range []bool{false, true} {
		t.Run(fmt.Sprintf("ContextTimeoutEnabled=%v", ctxTimeouts), func(t *testing.T) {
			test(t, ctxTimeouts)
		})
	}
}

func testStalledRedisIsNoticedWithinTimeout(t *testing.T, ctxTimeouts bool) {
	srv := withServer(t)
	c := srv.client(t, func(o *goredis.Options) {
		o.DialTimeout, o.ReadTimeout, o.WriteTimeout = 5*time.Second, 5*time.Second, 5*time.Second
		o.ContextTimeoutEnabled = ctxTimeouts // false: go-redis ignores context deadlines
	})
	cfg := fastStore()
	cfg.KeyPrefix = prefixFor(t)
	flushKeys(t, c, cfg.KeyPrefix)
	s, err := rxredis.NewStore(c, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	b, err := rxredis.NewBulkhead(s, "p", fleetConfig(1, 2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	held := b.Acquire()
	if err := await(t, held.Acquisition()); err != nil {
		t.Fatal(err)
	}

	srv.Pause()
	defer srv.Resume()
	start := time.Now()
	waiter := b.AcquirePermissionAsync()
	err = await(t, waiter)
	noticed := time.Since(start)
	if !errors.Is(err, rxredis.ErrUnavailable) || errors.Is(err, bulkhead.ErrBulkheadFull) {
		t.Fatalf("a call while Redis is stalled: %v after %v, want ErrUnavailable", err, noticed)
	}
	bound := cfg.Timeout + cfg.ProbeInterval + 300*time.Millisecond // slack for a loaded machine
	t.Logf("stall noticed after %v (Timeout %v, ProbeInterval %v)", noticed, cfg.Timeout, cfg.ProbeInterval)
	if noticed > bound {
		t.Errorf("stall noticed after %v, want within Timeout + ProbeInterval (+ slack) = %v", noticed, bound)
	}
	start = time.Now()
	if err := b.Check(context.Background()); !errors.Is(err, rxredis.ErrUnavailable) {
		t.Errorf("Check while stalled = %v, want ErrUnavailable", err)
	}
	if d := time.Since(start); d > cfg.Timeout+300*time.Millisecond {
		t.Errorf("Check while stalled took %v, want about Timeout (%v)", d, cfg.Timeout)
	}
	held.Finish() // its release waits for Redis
	start = time.Now()
	if err := s.Close(); err != nil {
		t.Errorf("Close while stalled: %v", err)
	}
	t.Logf("Close while stalled took %v", time.Since(start))
	if d := time.Since(start); d > 2*cfg.Timeout+500*time.Millisecond {
		t.Errorf("Close while stalled took %v, want at most about 2 × Timeout (%v)", d, cfg.Timeout)
	}
}

// TestCloseIsBoundedByTimeoutWhenRedisStallsBeforeTheSubscriptionConnects
// pins a bug: go-redis connects a PubSub (dial, HELLO, PSUBSCRIBE) holding
// the PubSub's mutex and ignores the context's cancellation there, so a
// server that stalled before the Store's subscriber had connected held
// Close for the client's ReadTimeout (5 s here), in PubSub.Close waiting
// for that mutex. The subscription now runs over connections the Store
// closes itself. The server is paused before NewStore; the test closes
// the Store once the subscriber has dialed (its HELLO then waits for the
// stalled server), with a call waiting on a bulkhead.
func TestCloseIsBoundedByTimeoutWhenRedisStallsBeforeTheSubscriptionConnects(t *testing.T) {
	withAndWithoutContextTimeouts(t, testCloseBoundedBeforeSubscription)
}

func testCloseBoundedBeforeSubscription(t *testing.T, ctxTimeouts bool) {
	srv := withServer(t)
	dialed := make(chan struct{}, 1)
	c := srv.client(t, func(o *goredis.Options) {
		o.DialTimeout, o.ReadTimeout, o.WriteTimeout = 5*time.Second, 5*time.Second, 5*time.Second
		o.ContextTimeoutEnabled = ctxTimeouts
		o.Dialer = func(ctx context.Context, network, addr string) (net.Conn, error) {
			nc, err := (&net.Dialer{}).DialContext(ctx, network, addr)
			if err == nil {
				select {
				case dialed <- struct{}{}:
				default:
				}
			}
			return nc, err
		}
	})
	cfg := fastStore()
	cfg.KeyPrefix = prefixFor(t)
	flushKeys(t, c, cfg.KeyPrefix)
	before := goleak.IgnoreCurrent()
	srv.Pause()
	defer srv.Resume()
	s, err := rxredis.NewStore(c, cfg)
	if err != nil {
		t.Fatal(err)
	}
	// Without bulkheads the Store makes no round trip: the first
	// connection dialed is the subscriber's.
	closeWithAWaiterWithinTimeout(t, s, cfg.Timeout, dialed, "while stalled before the subscription connected")
	// A round trip the Store gave up on holds a pooled connection of the
	// client until go-redis gives up or the client is closed; the
	// subscription's own connections were closed by Close.
	c.Close()
	if err := goleak.Find(before); err != nil {
		t.Errorf("goroutines left once the Store and the client are closed: %v", err)
	}
}

// goroutineIDs records, per command name, the goroutine that sent it.
type goroutineIDs struct {
	mu  sync.Mutex
	ids map[string]map[string]bool
}

func (h *goroutineIDs) DialHook(next goredis.DialHook) goredis.DialHook { return next }

func (h *goroutineIDs) record(name string) {
	var buf [64]byte
	id, _, _ := strings.Cut(strings.TrimPrefix(string(buf[:runtime.Stack(buf[:], false)]), "goroutine "), " ")
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ids[name] == nil {
		h.ids[name] = map[string]bool{}
	}
	h.ids[name][id] = true
}

func (h *goroutineIDs) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		h.record(cmd.Name())
		return next(ctx, cmd)
	}
}

func (h *goroutineIDs) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error {
		h.record("pipeline")
		return next(ctx, cmds)
	}
}

// Issue 21's speed goal: the dispatcher makes its round trips on its own
// goroutine (a watchdog replaces it only if one stalls), not on a new
// goroutine per round trip, which cost a goroutine start and its stack's
// growth through go-redis on every acquire (the old code: one goroutine id
// per round trip).
func TestRoundTripsRunOnTheDispatchersOwnGoroutine(t *testing.T) {
	srv := sharedServer(t)
	c := srv.client(t)
	hook := &goroutineIDs{ids: map[string]map[string]bool{}}
	c.AddHook(hook)
	// Renewals every 3.3s: none in this test; a Timeout no loaded machine
	// reaches, so that no watchdog replaces the dispatcher.
	cfg := rxredis.StoreConfig{KeyPrefix: prefixFor(t), Timeout: 10 * time.Second}
	flushKeys(t, c, cfg.KeyPrefix)
	s, err := rxredis.NewStore(c, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	b := newBulkhead(t, s, "p", fleetConfig(2, time.Second))
	for range 50 {
		if err := await(t, b.AcquirePermissionAsync()); err != nil {
			t.Fatal(err)
		}
		b.FinishCall()
	}
	hook.mu.Lock()
	defer hook.mu.Unlock()
	if n := len(hook.ids["evalsha"]); n != 1 {
		t.Errorf("50 acquisitions' round trips ran on %d goroutines, want the dispatcher's alone", n)
	}
}

// Regression (issue 21, item 2): an unauthenticated EVALSHA with more than
// 10 arguments gets "unauthenticated multibulk length" and a closed
// connection, the next round trip EOF, and the PING probe NOAUTH, counted
// as a failure: the Store stayed "unreachable" for good, FailOver admitted
// every call locally and nothing named the credentials.
func TestRefusedCredentialsOrACLAreReportedOnEveryCallAndNeverAdmittedLocally(t *testing.T) {
	srv := withServer(t, "--requirepass", "secret")
	admin := srv.client(t, func(o *goredis.Options) { o.Password = "secret" })
	ctx := context.Background()
	if err := admin.Do(ctx, "ACL", "SETUSER", "limited", "on", ">pw", "~*", "+@connection").Err(); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, user, password, says string
	}{
		{"no password", "", "", "NOAUTH"},
		{"wrong password", "", "wrong", "WRONGPASS"},
		{"ACL without scripts", "limited", "pw", "NOPERM"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := srv.client(t, func(o *goredis.Options) { o.Username, o.Password = tc.user, tc.password })
			cfg := fastStore()
			cfg.KeyPrefix = prefixFor(t)
			s, err := rxredis.NewStore(c, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			evs := recordStoreEvents(s)
			bcfg := fleetConfig(5, 200*time.Millisecond)
			bcfg.Unreachable, bcfg.LocalFraction = rxredis.FailOver, 1
			b, err := rxredis.NewBulkhead(s, "p", bcfg)
			if err != nil {
				t.Fatal(err)
			}
			var rejected, permitted int
			var mu sync.Mutex
			b.OnEvent(func(e bulkhead.Event) {
				mu.Lock()
				defer mu.Unlock()
				switch e.Type {
				case bulkhead.CallRejected:
					if e.Reason == bulkhead.Unavailable { // counted as reason="unavailable"
						rejected++
					}
				case bulkhead.CallPermitted:
					permitted++
				}
			})
			// Bursts of calls (several requests per round trip) spread over
			// several probe intervals (50ms), so that some meet each state
			// the Store goes through.
			const bursts, burst = 10, 10
			const calls = bursts * burst
			for i := range bursts {
				var as []*bulkhead.Acquisition
				for range burst {
					as = append(as, b.AcquirePermissionAsync())
				}
				for j, a := range as {
					err := await(t, a)
					if err == nil {
						b.FinishCall()
						evs.mu.Lock()
						t.Fatalf("burst %d call %d was admitted although Redis refuses the credentials; store events %v", i, j, evs.evs)
					}
					if !errors.Is(err, rxredis.ErrRefused) || errors.Is(err, rxredis.ErrUnavailable) || !strings.Contains(err.Error(), "check Username/Password") {
						t.Fatalf("burst %d call %d: %v, want a *StoreError matching ErrRefused (not ErrUnavailable) that says what to check", i, j, err)
					}
				}
				time.Sleep(15 * time.Millisecond)
			}
			err = b.Check(ctx)
			if !errors.Is(err, rxredis.ErrRefused) || !strings.Contains(err.Error(), tc.says) {
				t.Errorf("Check = %v, want ErrRefused naming %s", err, tc.says)
			}
			mu.Lock()
			if rejected != calls || permitted != 0 {
				t.Errorf("events: %d rejected with Reason Unavailable, %d permitted, want %d and 0", rejected, permitted, calls)
			}
			mu.Unlock()
			if e, ok := evs.first(rxredis.StoreRefused); !ok || !errors.Is(&rxredis.StoreError{Err: e.Err}, rxredis.ErrRefused) {
				t.Errorf("no StoreRefused event naming the refusal (got %+v)", e)
			}
			if n := evs.count(rxredis.StoreDown); n != 0 {
				t.Errorf("%d StoreDown events: a refusal is not an outage", n)
			}
			if s.Available() {
				t.Error("Available() while Redis refuses the credentials")
			}
			if tc.user == "" {
				return
			}
			// The ACL is fixed at run time: the next probe finds it.
			// What the guide says the user needs, and no more.
			if err := admin.Do(ctx, "ACL", "SETUSER", tc.user, "+@scripting", "+@pubsub", "+@sortedset", "+@string", "+@hash", "+time", "+type", "+pttl", "+pexpire", "&*").Err(); err != nil {
				t.Fatal(err)
			}
			defer admin.Do(ctx, "ACL", "SETUSER", tc.user, "-@all", "+@connection", "resetchannels")
			eventually(t, outcomeTimeout, "store up once the ACL allows the scripts", s.Available)
			a := b.AcquirePermissionAsync()
			if err := await(t, a); err != nil {
				t.Fatalf("after the ACL was fixed: %v", err)
			}
			b.FinishCall()
			if evs.count(rxredis.StoreUp) == 0 {
				t.Error("no StoreUp event after recovery")
			}
		})
	}
}

// Regression (issue 21, item 3): a ticket lived LeaseTTL, so the queued
// calls of a crashed replica blocked every other replica's no-wait calls
// (refused as full with no permit held) for up to LeaseTTL.
func TestTicketsOfAKilledReplicaStopBlockingTheFleetWithinTicketTTL(t *testing.T) {
	srv := sharedServer(t)
	cfg := fastStore()
	cfg.LeaseTTL, cfg.RenewInterval = 10*time.Second, time.Second
	cfg.KeyPrefix = prefixFor(t)
	s, c := newStore(t, srv, cfg)
	b := newBulkhead(t, s, "partner", fleetConfig(1, 0))
	held := b.Acquire()
	if err := await(t, held.Acquisition()); err != nil {
		t.Fatal(err)
	}
	// The child queues 3 calls behind the held permit; its Store uses the
	// default TicketTTL (2s with a LeaseTTL of 10s).
	p := childParams{Addr: srv.Addr(), Prefix: cfg.KeyPrefix, Name: "partner", Permits: 1, Hold: 3,
		LeaseTTL: 10 * time.Second, Renew: time.Second}
	cmd, sc := startChild(t, "queuer", p)
	readResult(t, sc)
	if m, err := b.FleetMetrics(context.Background()); err != nil || m.QueuedCalls != 3 {
		t.Fatalf("fleet queue = %+v, %v; want the child's 3 tickets", m, err)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	_ = cmd.Wait()
	held.Finish()
	const ticketTTL = 2 * time.Second
	bound := ticketTTL*4/3 + cfg.PollInterval + 500*time.Millisecond // slack for a loaded machine
	var got *rxredis.Permit
	for got == nil {
		if time.Since(killed) > bound+time.Second {
			m, _ := b.FleetMetrics(context.Background())
			t.Fatalf("no-wait calls still refused %v after the kill (fleet %+v)", time.Since(killed), m)
		}
		pm := b.Acquire()
		if err := await(t, pm.Acquisition()); err == nil {
			got = pm
		} else if !errors.Is(err, bulkhead.ErrBulkheadFull) {
			t.Fatalf("no-wait call: %v", err)
		} else {
			time.Sleep(20 * time.Millisecond)
		}
	}
	d := time.Since(killed)
	t.Logf("dead tickets stopped blocking %v after the kill (TicketTTL %v)", d, ticketTTL)
	if d > bound {
		t.Errorf("dead tickets blocked the fleet for %v, want within TicketTTL × 4/3 (+ poll and slack) = %v", d, bound)
	}
	got.Finish()
	fleetIdle(t, c, cfg.KeyPrefix, "partner", outcomeTimeout)
}

// Regression (issue 21, item 4): FinishCall gave back the oldest permit of
// the process, a Permit of Acquire included, whose own Finish then
// panicked.
func TestFinishCallNeverGivesBackAPermitOfAcquire(t *testing.T) {
	s, c := newStore(t, sharedServer(t), fastStore())
	b := newBulkhead(t, s, "p", fleetConfig(3, time.Second))
	typed := b.Acquire()
	if err := await(t, typed.Acquisition()); err != nil {
		t.Fatal(err)
	}
	a := b.AcquirePermissionAsync()
	if err := await(t, a); err != nil {
		t.Fatal(err)
	}
	lease, _ := b.LeaseOf(a)
	b.FinishCall() // the permit of a, not the older typed one
	if _, ok := b.LeaseOf(a); ok {
		t.Errorf("FinishCall left the interface's permit (%v) held", lease)
	}
	if _, ok := typed.Lease(); !ok {
		t.Fatal("FinishCall gave back the Permit of Acquire")
	}
	func() {
		defer func() {
			r := recover()
			if r == nil || !strings.Contains(fmt.Sprint(r), `"p"`) {
				t.Errorf("FinishCall with only a Permit of Acquire held: recovered %v, want a panic naming the bulkhead", r)
			}
		}()
		b.FinishCall()
	}()
	typed.Finish() // must not panic
	if m := b.Metrics(); m.InFlightCalls != 0 {
		t.Errorf("%d permits held after every give-back", m.InFlightCalls)
	}
	fleetIdle(t, c, prefixFor(t), "p", outcomeTimeout)
}

// Item 4: go-redis logs "failed to dial" on every probe while Redis is
// away; with Logger installed those messages reach the Store's listeners
// instead of the process's log.
func TestGoRedisDialLogsOfAStoreGoToItsListenersWithLogger(t *testing.T) {
	srv := withServer(t)
	srv.Kill() // nothing listens on its port now
	var mu sync.Mutex
	var elsewhere []string
	goredis.SetLogger(rxredis.Logger(loggerFunc(func(msg string) {
		mu.Lock()
		elsewhere = append(elsewhere, msg)
		mu.Unlock()
	})))
	defer goredis.SetLogger(quietLogger{})
	c := srv.client(t)
	s, err := rxredis.NewStore(c, fastStore())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	evs := recordStoreEvents(s)
	b, err := rxredis.NewBulkhead(s, "p", fleetConfig(1, 0))
	if err != nil {
		t.Fatal(err)
	}
	if err := await(t, b.AcquirePermissionAsync()); !errors.Is(err, rxredis.ErrUnavailable) {
		t.Fatalf("call with nothing listening: %v, want ErrUnavailable", err)
	}
	eventually(t, outcomeTimeout, "dial failures reported as ClientLog events", func() bool { return evs.count(rxredis.ClientLog) >= 3 })
	if e, _ := evs.first(rxredis.ClientLog); !strings.Contains(e.Message, "dial") {
		t.Errorf("ClientLog event %q does not carry go-redis's message", e.Message)
	}
	if evs.count(rxredis.StoreDown) != 1 {
		t.Errorf("%d StoreDown events, want 1 for one outage", evs.count(rxredis.StoreDown))
	}
	mu.Lock()
	if len(elsewhere) != 0 {
		t.Errorf("messages about the Store's round trips reached the next logger: %q", elsewhere)
	}
	mu.Unlock()
	// A message about anything else still reaches the next logger.
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	other := goredis.NewClient(&goredis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", port), MaxRetries: -1, DialerRetries: 1})
	_ = other.Ping(context.Background()).Err()
	other.Close()
	mu.Lock()
	defer mu.Unlock()
	if len(elsewhere) == 0 {
		t.Error("a message about another client's round trip did not reach the next logger")
	}
}

type loggerFunc func(string)

func (f loggerFunc) Printf(_ context.Context, format string, v ...any) { f(fmt.Sprintf(format, v...)) }

// A failover to a replica that had not received the last increments of
// the token counter (or a restart that lost it) finds the counter lower
// than tokens already issued: the next token must still be higher.
func TestTokensNeverGoBackWhenTheCounterIsRolledBack(t *testing.T) {
	s, c := newStore(t, sharedServer(t), fastStore())
	b := newBulkhead(t, s, "p", fleetConfig(1, time.Second))
	first := b.Acquire()
	if err := await(t, first.Acquisition()); err != nil {
		t.Fatal(err)
	}
	l1, _ := first.Lease()
	first.Finish()
	// What a lagging replica holds: the counter as it was long ago.
	if err := c.Set(context.Background(), prefixFor(t)+"{p}:seq", 7, 0).Err(); err != nil {
		t.Fatal(err)
	}
	second := b.Acquire()
	if err := await(t, second.Acquisition()); err != nil {
		t.Fatal(err)
	}
	l2, _ := second.Lease()
	second.Finish()
	if l2.Token <= l1.Token {
		t.Errorf("token %d after the rollback, not above %d issued before", l2.Token, l1.Token)
	}
	fleetIdle(t, c, prefixFor(t), "p", outcomeTimeout)
}

// With WaitReplicas, a grant that no replica acknowledged is not
// delivered: the call is rejected as if Redis were away (a failover could
// lose that grant), and the lease is given back.
func TestWaitReplicasRejectsGrantsNoReplicaAcknowledged(t *testing.T) {
	srv := withServer(t) // no replica
	cfg := fastStore()
	cfg.WaitReplicas = 1
	// WAIT blocks Timeout/2: leave the loaded machine room for the rest
	// of the round trip before the Store calls it a stall (which fails
	// the call too, but without naming the replicas).
	cfg.Timeout = 1200 * time.Millisecond // WAIT 600ms, under the client's 1s ReadTimeout
	s, c := newStore(t, srv, cfg)
	b := newBulkhead(t, s, "p", fleetConfig(2, 0))
	err := await(t, b.AcquirePermissionAsync())
	if !errors.Is(err, rxredis.ErrUnavailable) || !strings.Contains(err.Error(), "acknowledged") {
		t.Fatalf("a grant without a replica: %v, want ErrUnavailable saying no replica acknowledged it", err)
	}
	fleetIdle(t, c, prefixFor(t), "p", outcomeTimeout)
	if _, err := rxredis.NewStore(goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: []string{srv.Addr()}}), cfg); err == nil || !strings.Contains(err.Error(), "WaitReplicas") {
		t.Errorf("NewStore with a ClusterClient and WaitReplicas: %v, want an error naming WaitReplicas", err)
	}
}

// closeWithAWaiterWithinTimeout waits (at most outcomeTimeout) until the
// Store's subscriber has connected (connected), then closes s with a call
// waiting on one of its bulkheads, and checks that Close took at most
// about 2 × timeout (the Store's) and that the waiting call learned it.
func closeWithAWaiterWithinTimeout(t *testing.T, s *rxredis.Store, timeout time.Duration, connected <-chan struct{}, when string) {
	t.Helper()
	select {
	case <-connected:
	case <-time.After(outcomeTimeout):
		t.Fatalf("the Store's subscriber made no connection within %v", outcomeTimeout)
	}
	b := newBulkhead(t, s, "p", fleetConfig(1, time.Minute))
	waiter := b.AcquirePermissionAsync()
	start := time.Now()
	if err := s.Close(); err != nil {
		t.Errorf("Close %s: %v", when, err)
	}
	took := time.Since(start)
	t.Logf("Close %s took %v", when, took)
	if took > 2*timeout+500*time.Millisecond { // slack for a loaded machine
		t.Errorf("Close %s took %v, want at most about 2 × Timeout (%v)", when, took, timeout)
	}
	if err := await(t, waiter); !errors.Is(err, rxredis.ErrClosed) && !errors.Is(err, rxredis.ErrUnavailable) {
		t.Errorf("the waiting call: %v, want ErrClosed or ErrUnavailable", err)
	}
}
