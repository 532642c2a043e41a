package pool_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/rxbulkhead/bulkhead/pool"
)

// Bad input gets one behaviour: a nil argument is a programming error and
// panics with a message naming the function and the argument, as
// bulkhead.Semaphore.AcquirePermission(nil) does; an invalid configuration
// or option is an error of New or NewRegistry, where it is given.

func TestBadInputNilArgumentsPanicNamingTheArgument(t *testing.T) {
	p := newTestPool(t, "p", pool.Config{MaxWorkers: 1})
	fn := func(context.Context) (int, error) { return 0, nil }
	f := pool.Submit(context.Background(), p, fn)
	<-f.Done()
	var nilCtx context.Context
	for _, tc := range []struct {
		call func()
		want string
	}{
		{func() { pool.Submit(nilCtx, p, fn) }, "pool: Submit called with a nil context"},
		{func() { pool.Submit(context.Background(), nil, fn) }, "pool: Submit called with a nil *Pool"},
		{func() { pool.Submit[int](context.Background(), p, nil) }, "pool: Submit called with a nil func"},
		{func() { _, _ = f.Get(nilCtx) }, "pool: Future.Get called with a nil context"},
		{func() { f.OnDone(nil) }, "pool: Future.OnDone called with a nil func"},
		{func() { p.OnEvent(nil) }, "pool: OnEvent called with a nil listener"},
		{func() { _ = p.Close(nilCtx) }, "pool: Close called with a nil context"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			defer func() {
				if r := recover(); fmt.Sprint(r) != tc.want {
					t.Errorf("recovered %v, want a panic %q", r, tc.want)
				}
			}()
			tc.call()
		})
	}
}

func TestBadInputGetWithNilContextPanicsEvenWhenPending(t *testing.T) {
	p := newTestPool(t, "p", pool.Config{MaxWorkers: 1})
	g := newPoolGate(t)
	f := pool.Submit(context.Background(), p, poolTaskWaitingOn(g, 1))
	defer func() {
		if r := recover(); r != "pool: Future.Get called with a nil context" {
			t.Errorf("recovered %v", r)
		}
		g.open()
		<-f.Done()
	}()
	var nilCtx context.Context
	_, _ = f.Get(nilCtx)
}

func TestBadInputNewFailsNamingWhatIsWrong(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  pool.Config
		opts []pool.Option
		want string
	}{
		{"", pool.DefaultConfig(), nil, "pool: New: name must not be empty"},
		{"soap", pool.DefaultConfig(), []pool.Option{pool.WithClock(nil)}, `pool "soap": WithClock: clock must not be nil`},
		{"soap", pool.Config{}, nil, `bulkhead "soap": invalid config: MaxWorkers must be >= 1, got 0`},
		{"soap", pool.Config{MaxWorkers: 1, MaxQueueWait: time.Second}, nil,
			`bulkhead "soap": invalid config: QueueCapacity must be >= 1 when MaxQueueWait is positive (bulkhead.Unbounded for no bound), got 0`},
		{"soap", pool.Config{MaxWorkers: 1, QueueCapacity: 10}, nil,
			`bulkhead "soap": invalid config: MaxQueueWait must be positive when QueueCapacity is (bulkhead.NoTimeout for no bound), got 0s`},
	} {
		t.Run(tc.want, func(t *testing.T) {
			p, err := pool.New(tc.name, tc.cfg, tc.opts...)
			if p != nil || err == nil || err.Error() != tc.want {
				t.Fatalf("New = %v, %v; want the error %q", p, err, tc.want)
			}
		})
	}
}

func TestBadInputUnknownRegistryConfigName(t *testing.T) {
	r, err := pool.NewRegistry(pool.Config{MaxWorkers: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.GetWithConfig("soap", "huge"); err == nil || err.Error() != `bulkhead "soap": unknown pool config "huge" (known: default)` {
		t.Fatalf("GetWithConfig with an unknown config: %v", err)
	}
	if err := r.AddConfig("bad", pool.Config{MaxWorkers: -1}); err == nil || err.Error() != `bulkhead "bad": invalid config: MaxWorkers must be >= 1, got -1` {
		t.Fatalf("AddConfig with an invalid config: %v", err)
	}
	if _, err := r.GetWithConfig("soap", "bad"); err == nil {
		t.Fatal("an invalid config was added")
	}
	if err := r.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}
