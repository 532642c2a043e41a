package redis_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	rxredis "github.com/rxbulkhead/bulkhead/contrib/redis"
)

// doneCtxHook counts the commands the client was asked to process with a
// context that had already ended.
type doneCtxHook struct{ n *atomic.Int64 }

func (h doneCtxHook) DialHook(next goredis.DialHook) goredis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) { return next(ctx, network, addr) }
}

func (h doneCtxHook) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		if ctx.Err() != nil {
			h.n.Add(1)
		}
		return next(ctx, cmd)
	}
}

func (h doneCtxHook) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error {
		if ctx.Err() != nil {
			h.n.Add(1)
		}
		return next(ctx, cmds)
	}
}

// Every public entry that takes a context, given one that has already
// ended, fails at once with an error wrapping ctx.Err() that says the
// context ended: it does not reach Redis, and it is neither
// ErrUnavailable (Redis was not found away) nor a refusal.
func TestACallGivenAnEndedContextFailsAtOnceSayingSo(t *testing.T) {
	s, c := newStore(t, sharedServer(t), fastStore())
	var sent atomic.Int64
	c.AddHook(doneCtxHook{&sent})
	b := newBulkhead(t, s, "p", fleetConfig(2, 0))
	raised := b.Config()
	raised.MaxConcurrentCalls = 5

	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel2 := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel2()
	for _, ctx := range []context.Context{cancelled, expired} {
		for name, call := range map[string]func(context.Context) error{
			"ChangeConfig": func(ctx context.Context) error { return b.ChangeConfig(ctx, raised) },
			"FleetMetrics": func(ctx context.Context) error { _, err := b.FleetMetrics(ctx); return err },
			"Check":        b.Check,
		} {
			err := call(ctx)
			switch {
			case err == nil:
				t.Errorf("%s with %v: no error", name, ctx.Err())
			case !errors.Is(err, ctx.Err()):
				t.Errorf("%s with %v: %v, not wrapping the context's error", name, ctx.Err(), err)
			case errors.Is(err, rxredis.ErrUnavailable) || errors.Is(err, rxredis.ErrRefused):
				t.Errorf("%s with %v: %v matches ErrUnavailable or ErrRefused", name, ctx.Err(), err)
			case strings.Contains(err.Error(), "unreachable") || strings.Contains(err.Error(), "refused"):
				t.Errorf("%s with %v: %q blames Redis", name, ctx.Err(), err)
			case !strings.Contains(err.Error(), "context") || !strings.Contains(err.Error(), `"p"`):
				t.Errorf("%s with %v: %q does not say the context ended and name the bulkhead", name, ctx.Err(), err)
			}
		}
	}
	// A round trip with a live context, after them: the limit is the one
	// configured, and no command went out with an ended context.
	m, err := b.FleetMetrics(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if m.MaxConcurrentCalls != 2 || b.Config().MaxConcurrentCalls != 2 {
		t.Errorf("fleet limit %d, Config %d after ChangeConfig with ended contexts, want 2", m.MaxConcurrentCalls, b.Config().MaxConcurrentCalls)
	}
	if n := sent.Load(); n != 0 {
		t.Errorf("%d commands were handed to the client with an ended context", n)
	}
}

// A nil context is a mistake of the caller's: each entry panics with a
// message naming it, in the module's style, before doing anything.
func TestACallGivenANilContextPanicsNamingIt(t *testing.T) {
	s, _ := newStore(t, sharedServer(t), fastStore())
	b := newBulkhead(t, s, "p", fleetConfig(2, 0))
	var nilCtx context.Context
	for name, call := range map[string]func(){
		"ChangeConfig": func() { _ = b.ChangeConfig(nilCtx, b.Config()) },
		"FleetMetrics": func() { _, _ = b.FleetMetrics(nilCtx) },
		"Check":        func() { _ = b.Check(nilCtx) },
	} {
		want := "redis: " + name + " called with a nil context"
		func() {
			defer func() {
				if got := recover(); got != want {
					t.Errorf("%s(nil): panic %v, want %q", name, got, want)
				}
			}()
			call()
		}()
	}
}

// cancelHook cancels the caller's context when the client is asked to run
// a script: the context ends while the round trip is under way.
type cancelHook struct {
	doneCtxHook
	cancel *atomic.Pointer[context.CancelFunc]
}

func (h cancelHook) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		if c := h.cancel.Swap(nil); c != nil {
			(*c)()
		}
		return next(ctx, cmd)
	}
}

// A context that ends while the round trip is under way says so too: the
// error wraps ctx.Err(), is no *StoreError and blames no Redis (it was not
// found away, nor did it refuse).
func TestACallWhoseContextEndsDuringTheRoundTripSaysSo(t *testing.T) {
	s, c := newStore(t, sharedServer(t), fastStore())
	var cancelNext atomic.Pointer[context.CancelFunc]
	c.AddHook(cancelHook{cancel: &cancelNext})
	b := newBulkhead(t, s, "p", fleetConfig(2, 0))
	raised := b.Config()
	raised.MaxConcurrentCalls = 5
	for name, call := range map[string]func(context.Context) error{
		"ChangeConfig": func(ctx context.Context) error { return b.ChangeConfig(ctx, raised) },
		"FleetMetrics": func(ctx context.Context) error { _, err := b.FleetMetrics(ctx); return err },
		"Check":        b.Check,
	} {
		ctx, cancel := context.WithCancel(context.Background())
		cancelNext.Store(&cancel)
		err := call(ctx)
		cancel()
		var se *rxredis.StoreError
		switch {
		case cancelNext.Load() != nil:
			t.Fatalf("%s: no command reached the client", name)
		case !errors.Is(err, context.Canceled):
			t.Errorf("%s: %v, not wrapping context.Canceled", name, err)
		case errors.As(err, &se):
			t.Errorf("%s: %v is a *StoreError", name, err)
		case !strings.Contains(err.Error(), "context ended during the round trip") || !strings.Contains(err.Error(), `"p"`):
			t.Errorf("%s: %q does not say the context ended during the round trip and name the bulkhead", name, err)
		}
	}
}
