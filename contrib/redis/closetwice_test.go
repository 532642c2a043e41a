package redis_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	rxredis "github.com/rxbulkhead/bulkhead/contrib/redis"
)

// holdTimeout bounds every wait of the tests below for a held give-back:
// even if the code is wrong, each ends by itself.
const holdTimeout = 3 * time.Second

// giveBackHold is a go-redis hook that holds, once armed, the command sent
// alone (not in a pipeline) whose arguments carry the id of lease: the
// round script by which Store.Close gives back the leases of one bulkhead
// (one bulkhead with work and WaitReplicas 0 make one EVALSHA, not a
// pipeline). The renewals, which carry the id too, are pipelined and pass
// through; the tests finish no call, so no other round trip carries it.
type giveBackHold struct {
	lease   string
	armed   atomic.Bool
	once    sync.Once
	entered chan struct{} // closed when the give-back is held
	release chan struct{} // closed by the test to let it go on
	fail    error         // if not nil, the give-back fails with it instead of reaching Redis
}

func newGiveBackHold() *giveBackHold {
	return &giveBackHold{entered: make(chan struct{}), release: make(chan struct{})}
}

func (h *giveBackHold) DialHook(next goredis.DialHook) goredis.DialHook { return next }

func (h *giveBackHold) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return next
}

func (h *giveBackHold) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		if !h.armed.Load() || !h.carriesLease(cmd) {
			return next(ctx, cmd)
		}
		h.once.Do(func() { close(h.entered) })
		select {
		case <-h.release:
		case <-ctx.Done():
		case <-time.After(holdTimeout):
		}
		if h.fail != nil {
			cmd.SetErr(h.fail)
			return h.fail
		}
		return next(ctx, cmd)
	}
}

func (h *giveBackHold) carriesLease(cmd goredis.Cmder) bool {
	if cmd.Name() != "evalsha" {
		return false
	}
	return slices.ContainsFunc(cmd.Args(), func(a any) bool { return fmt.Sprint(a) == h.lease })
}

// closeHeldStore returns a Store over a client with hook h, whose Timeout
// outlasts holdTimeout (the Store's own bound never ends a held
// give-back); its bulkhead "p" (2 permits, an unbounded queue), which
// holds one lease (h.lease); the client; and a second client without the
// hook, for checks.
func closeHeldStore(t *testing.T, h *giveBackHold) (*rxredis.Store, *rxredis.Bulkhead, *goredis.Client, *goredis.Client) {
	t.Helper()
	srv := sharedServer(t)
	check := srv.client(t)
	c := srv.client(t)
	c.AddHook(h)
	cfg := fastStore()
	cfg.Timeout = 2 * holdTimeout
	cfg.KeyPrefix = prefixFor(t)
	flushKeys(t, check, cfg.KeyPrefix)
	s, err := rxredis.NewStore(c, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	b, err := rxredis.NewBulkhead(s, "p", fleetConfig(2, time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	p := b.Acquire()
	if err := await(t, p.Acquisition()); err != nil {
		t.Fatal(err)
	}
	lease, ok := p.Lease()
	if !ok {
		t.Fatal("no lease for a granted call")
	}
	h.lease = lease.ID
	return s, b, c, check
}

// startClose calls s.Close on a goroutine of its own; its result comes on
// the channel.
func startClose(s *rxredis.Store) <-chan error {
	ch := make(chan error, 1)
	go func() { ch <- s.Close() }()
	return ch
}

func within(t *testing.T, ch <-chan error, what string) error {
	t.Helper()
	select {
	case err := <-ch:
		return err
	case <-time.After(outcomeTimeout):
		t.Fatalf("%s did not return within %v", what, outcomeTimeout)
		return nil
	}
}

// holdFirstClose arms h, starts the first Close of s and waits until its
// give-back is held in h's hook; the Close's result comes on the channel.
func holdFirstClose(t *testing.T, s *rxredis.Store, h *giveBackHold) <-chan error {
	t.Helper()
	h.armed.Store(true)
	first := startClose(s)
	select {
	case <-h.entered:
	case err := <-first:
		t.Fatalf("the first Close returned (%v) without sending its give-back", err)
	case <-time.After(holdTimeout):
		t.Fatalf("the first Close's give-back did not reach the hook within %v", holdTimeout)
	}
	return first
}

// notWhileHeld checks that what (a Close whose result comes on ch) has not
// returned 300 ms into the first Close's held give-back; if it has, it
// releases the hold, waits for first and fails the test.
func notWhileHeld(t *testing.T, h *giveBackHold, ch, first <-chan error, what string) {
	t.Helper()
	select {
	case err := <-ch:
		close(h.release)
		within(t, first, "the first Close")
		t.Fatalf("%s returned (%v) while the first Close was still giving the leases back", what, err)
	case <-time.After(300 * time.Millisecond):
	}
}

// A signal handler's Close and a deferred Close at shutdown, followed by
// the client's Close: the second Close must not return while the first is
// still giving the leases back, or the client closes under it and the
// leases stay in Redis until LeaseTTL.
func TestASecondCloseReturnsOnlyOnceTheFirstHasGivenTheLeasesBack(t *testing.T) {
	h := newGiveBackHold()
	s, _, c, check := closeHeldStore(t, h)
	first := holdFirstClose(t, s, h)
	second := startClose(s)
	notWhileHeld(t, h, second, first, "the second Close")
	close(h.release)
	if err := within(t, second, "the second Close"); err != nil {
		t.Errorf("second Close: %v", err)
	}
	// What the caller does next: close the client. The leases must be back
	// in Redis already.
	c.Close()
	if err := within(t, first, "the first Close"); err != nil {
		t.Errorf("first Close: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), holdTimeout)
	defer cancel()
	if n, err := check.ZCard(ctx, prefixFor(t)+"{p}:leases").Result(); err != nil || n != 0 {
		t.Errorf("leases left in Redis after both Close returned: %d (%v), want 0", n, err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("a third Close, after both: %v", err)
	}
}

func TestASecondCloseReturnsTheErrorOfTheFirst(t *testing.T) {
	h := newGiveBackHold()
	h.fail = errors.New("give-back refused by the test")
	s, _, _, _ := closeHeldStore(t, h)
	first := holdFirstClose(t, s, h)
	second := startClose(s)
	close(h.release)
	err1 := within(t, first, "the first Close")
	err2 := within(t, second, "the second Close")
	if !errors.Is(err1, h.fail) {
		t.Fatalf("first Close: %v, want an error wrapping %q", err1, h.fail)
	}
	if err2 != err1 {
		t.Errorf("second Close: %v, want the first's error %v", err2, err1)
	}
	if err3 := s.Close(); err3 != err1 {
		t.Errorf("a Close after both: %v, want the first's error %v", err3, err1)
	}
}

// The calls still waiting are rejected on the first Close's goroutine
// while the give-back is in flight: a rejection callback that calls Close
// (an "on error, shut down" handler) gets the first Close's result once
// the give-back has ended, rather than waiting for the Close that runs it.
func TestACloseFromTheRejectionCallbackOfAWaiterReturnsWithTheGiveBack(t *testing.T) {
	h := newGiveBackHold()
	s, b, _, check := closeHeldStore(t, h)
	// The second permit of "p", then a waiter: one bulkhead with work, so
	// that the give-back is one EVALSHA (see giveBackHold).
	if err := await(t, b.Acquire().Acquisition()); err != nil {
		t.Fatal(err)
	}
	waiter := b.Acquire()
	fromCallback := make(chan error, 1)
	waiter.Acquisition().OnDone(func(error) { fromCallback <- s.Close() })
	eventually(t, outcomeTimeout, "waiter queued", func() bool { m, _ := b.FleetMetrics(context.Background()); return m.QueuedCalls == 1 })
	first := holdFirstClose(t, s, h)
	notWhileHeld(t, h, fromCallback, first, "the Close of the rejection callback")
	close(h.release)
	if err := within(t, fromCallback, "the Close of the rejection callback"); err != nil {
		t.Errorf("Close of the rejection callback: %v", err)
	}
	if err := within(t, first, "the first Close"); err != nil {
		t.Errorf("first Close: %v", err)
	}
	if !errors.Is(waiter.Acquisition().Err(), rxredis.ErrClosed) {
		t.Errorf("waiter: %v, want ErrClosed", waiter.Acquisition().Err())
	}
	fleetIdle(t, check, prefixFor(t), "p", outcomeTimeout)
}
