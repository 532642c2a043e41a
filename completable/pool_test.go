package completable_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"

	bulkhead "github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/completable"
	"github.com/rxbulkhead/bulkhead/pool"
	"github.com/rxbulkhead/bulkhead/testkit"
)

// ediPool returns a pool that is drained and leak-checked at cleanup.
func ediPool(t *testing.T, cfg pool.Config) *pool.Pool {
	t.Helper()
	p, err := pool.New("edi", cfg)
	if err != nil {
		t.Fatal(err)
	}
	testkit.ClosePool(t, p)
	return p
}

// poolObserver records the signals of one subscription.
type poolObserver struct {
	mu           sync.Mutex
	d            completable.Disposable
	signals      []string
	err          error
	disposeOnSub bool
}

func (o *poolObserver) OnSubscribe(d completable.Disposable) {
	o.mu.Lock()
	o.d = d
	o.signals = append(o.signals, "subscribe")
	o.mu.Unlock()
	if o.disposeOnSub {
		d.Dispose()
	}
}

func (o *poolObserver) OnComplete() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.signals = append(o.signals, "complete")
}

func (o *poolObserver) OnError(err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.signals = append(o.signals, "error")
	o.err = err
}

func (o *poolObserver) got() ([]string, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.signals...), o.err
}

func TestFromPoolCompletesOrFailsAfterOnSubscribe(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := ediPool(t, pool.Config{MaxWorkers: 2})
		ok := &poolObserver{}
		completable.FromPool(p, func(context.Context) error { return nil }).Subscribe(ok)
		boom := errors.New("boom")
		failed := &poolObserver{}
		completable.FromPool(p, func(context.Context) error { return boom }).Subscribe(failed)
		synctest.Wait()
		if s, err := ok.got(); len(s) != 2 || s[1] != "complete" || err != nil {
			t.Fatalf("signals %v %v, want subscribe, complete", s, err)
		}
		if s, err := failed.got(); len(s) != 2 || s[1] != "error" || err != boom {
			t.Fatalf("signals %v %v, want subscribe, error(boom)", s, err)
		}
	})
}

func TestFromPoolFullPoolSignalsFullError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := ediPool(t, pool.Config{MaxWorkers: 1})
		release := make(chan struct{})
		busy := pool.Submit(context.Background(), p, func(context.Context) (int, error) { <-release; return 0, nil })
		o := &poolObserver{}
		completable.FromPool(p, func(context.Context) error { return nil }).Subscribe(o)
		if s, err := o.got(); len(s) != 2 || !errors.Is(err, bulkhead.ErrBulkheadFull) {
			t.Fatalf("signals %v %v, want subscribe then the *FullError at once", s, err)
		}
		close(release)
		<-busy.Done()
	})
}

func TestFromPoolDisposeWithdrawsQueuedTaskWithoutSignal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := ediPool(t, pool.Config{MaxWorkers: 1, QueueCapacity: 1, MaxQueueWait: bulkhead.NoTimeout})
		release := make(chan struct{})
		busy := pool.Submit(context.Background(), p, func(context.Context) (int, error) { <-release; return 0, nil })
		var ran atomic.Bool
		o := &poolObserver{}
		completable.FromPool(p, func(context.Context) error { ran.Store(true); return nil }).Subscribe(o)
		o.d.Dispose()
		synctest.Wait()
		if d := p.Metrics().QueueDepth; d != 0 {
			t.Fatalf("QueueDepth = %d after Dispose, want 0", d)
		}
		close(release)
		<-busy.Done()
		synctest.Wait()
		if s, _ := o.got(); len(s) != 1 || ran.Load() || !o.d.IsDisposed() {
			t.Fatalf("signals %v, ran %v: want no signal after Dispose and fn never run", s, ran.Load())
		}
	})
}

func TestFromPoolDisposeWhileRunningCancelsTheContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := ediPool(t, pool.Config{MaxWorkers: 1})
		started, stopped := make(chan struct{}), make(chan error, 1)
		o := &poolObserver{}
		completable.FromPool(p, func(ctx context.Context) error {
			close(started)
			<-ctx.Done()
			stopped <- ctx.Err()
			return ctx.Err()
		}).Subscribe(o)
		<-started
		o.d.Dispose()
		if err := <-stopped; err != context.Canceled {
			t.Fatalf("task context: %v, want Canceled", err)
		}
		synctest.Wait()
		if s, _ := o.got(); len(s) != 1 {
			t.Fatalf("signals %v, want none after Dispose", s)
		}
	})
}

func TestFromPoolDisposeInsideOnSubscribeSubmitsNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := ediPool(t, pool.Config{MaxWorkers: 1})
		o := &poolObserver{disposeOnSub: true}
		completable.FromPool(p, func(context.Context) error { panic("must not run") }).Subscribe(o)
		synctest.Wait()
		if m := p.Metrics(); m.PoolSize != 0 {
			t.Fatalf("%+v: a worker started for a subscription disposed in OnSubscribe", m)
		}
	})
}
