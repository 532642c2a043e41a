package flowable_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"

	bulkhead "github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/flowable"
	"github.com/rxbulkhead/bulkhead/pool"
	"github.com/rxbulkhead/bulkhead/testkit"
)

// sftpPool returns a pool that is drained and leak-checked at cleanup.
func sftpPool(t *testing.T, cfg pool.Config) *pool.Pool {
	t.Helper()
	p, err := pool.New("sftp", cfg)
	if err != nil {
		t.Fatal(err)
	}
	testkit.ClosePool(t, p)
	return p
}

// poolSubscriber records signals; it requests nothing by itself.
type poolSubscriber struct {
	mu      sync.Mutex
	sub     flowable.Subscription
	signals []string
	err     error
	busy    atomic.Int32 // signals in progress: must never exceed 1 (rule 1.3)
	overlap atomic.Bool
}

func (s *poolSubscriber) enter(sig string) {
	if s.busy.Add(1) > 1 {
		s.overlap.Store(true)
	}
	s.mu.Lock()
	s.signals = append(s.signals, sig)
	s.mu.Unlock()
}

func (s *poolSubscriber) OnSubscribe(sub flowable.Subscription) {
	s.mu.Lock()
	s.sub = sub
	s.mu.Unlock()
	s.enter("subscribe")
	s.busy.Add(-1)
}
func (s *poolSubscriber) OnNext(v string) { s.enter("next:" + v); s.busy.Add(-1) }
func (s *poolSubscriber) OnError(err error) {
	s.mu.Lock()
	s.err = err
	s.mu.Unlock()
	s.enter("error")
	s.busy.Add(-1)
}
func (s *poolSubscriber) OnComplete() { s.enter("complete"); s.busy.Add(-1) }

func (s *poolSubscriber) got() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.signals, " ")
}

func TestFromPoolDeliversTheValueOnlyWhenRequested(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := sftpPool(t, pool.Config{MaxWorkers: 1})
		s := &poolSubscriber{}
		flowable.FromPool(p, func(context.Context) (string, error) { return "sent", nil }).Subscribe(s)
		synctest.Wait()
		if got := s.got(); got != "subscribe" {
			t.Fatalf("signals %q before any Request, want only subscribe", got)
		}
		s.sub.Request(1)
		if got := s.got(); got != "subscribe next:sent complete" {
			t.Fatalf("signals %q", got)
		}
		s.sub.Request(1) // after the terminal signal: nothing
		if got := s.got(); got != "subscribe next:sent complete" || s.overlap.Load() {
			t.Fatalf("signals %q (overlap %v)", got, s.overlap.Load())
		}
	})
}

func TestFromPoolRequestBeforeTheResultDeliversOnTheWorker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := sftpPool(t, pool.Config{MaxWorkers: 1})
		release := make(chan struct{})
		s := &poolSubscriber{}
		flowable.FromPool(p, func(context.Context) (string, error) { <-release; return "late", nil }).Subscribe(s)
		s.sub.Request(5)
		close(release)
		synctest.Wait()
		if got := s.got(); got != "subscribe next:late complete" {
			t.Fatalf("signals %q", got)
		}
	})
}

func TestFromPoolSignalsErrorsWithoutDemand(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := sftpPool(t, pool.Config{MaxWorkers: 1})
		boom := errors.New("boom")
		s := &poolSubscriber{}
		flowable.FromPool(p, func(context.Context) (string, error) { return "", boom }).Subscribe(s)
		synctest.Wait()
		if got := s.got(); got != "subscribe error" || s.err != boom {
			t.Fatalf("signals %q, err %v", got, s.err)
		}
		release := make(chan struct{})
		busy := pool.Submit(context.Background(), p, func(context.Context) (int, error) { <-release; return 0, nil })
		full := &poolSubscriber{}
		flowable.FromPool(p, func(context.Context) (string, error) { return "x", nil }).Subscribe(full)
		if got := full.got(); got != "subscribe error" || !errors.Is(full.err, bulkhead.ErrBulkheadFull) {
			t.Fatalf("full pool: signals %q, err %v", got, full.err)
		}
		close(release)
		<-busy.Done()
	})
}

func TestFromPoolCancelWithdrawsTheQueuedTask(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := sftpPool(t, pool.Config{MaxWorkers: 1, QueueCapacity: 1, MaxQueueWait: bulkhead.NoTimeout})
		release := make(chan struct{})
		busy := pool.Submit(context.Background(), p, func(context.Context) (int, error) { <-release; return 0, nil })
		var ran atomic.Bool
		s := &poolSubscriber{}
		flowable.FromPool(p, func(context.Context) (string, error) { ran.Store(true); return "x", nil }).Subscribe(s)
		s.sub.Request(1)
		s.sub.Cancel()
		synctest.Wait()
		if d := p.Metrics().QueueDepth; d != 0 {
			t.Fatalf("QueueDepth = %d after Cancel", d)
		}
		close(release)
		<-busy.Done()
		synctest.Wait()
		if got := s.got(); got != "subscribe" || ran.Load() {
			t.Fatalf("signals %q, ran %v: want no signal after Cancel and fn never run", got, ran.Load())
		}
	})
}

func TestFromPoolNonPositiveRequestSignalsRule39AndCancelsTheTask(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := sftpPool(t, pool.Config{MaxWorkers: 1})
		started, stopped := make(chan struct{}), make(chan error, 1)
		s := &poolSubscriber{}
		flowable.FromPool(p, func(ctx context.Context) (string, error) {
			close(started)
			<-ctx.Done()
			stopped <- ctx.Err()
			return "", ctx.Err()
		}).Subscribe(s)
		<-started // a task cancelled before it starts is withdrawn instead
		s.sub.Request(0)
		if err := <-stopped; err != context.Canceled {
			t.Fatalf("task context: %v", err)
		}
		synctest.Wait()
		if got := s.got(); got != "subscribe error" || !strings.Contains(s.err.Error(), "3.9") {
			t.Fatalf("signals %q, err %v: want one OnError citing rule 3.9", got, s.err)
		}
	})
}

func TestFromPoolRacingRequestAndResultDeliverExactlyOnce(t *testing.T) {
	p := sftpPool(t, pool.Config{MaxWorkers: 4, QueueCapacity: 64, MaxQueueWait: bulkhead.NoTimeout})
	for range 2000 {
		s := &poolSubscriber{}
		completed := make(chan struct{})
		flowable.FromPool(p, func(context.Context) (string, error) { return "v", nil }).
			Subscribe(flowable.Funcs[string]{ // forwards to s, and signals completion
				Start: s.OnSubscribe, Next: s.OnNext, Error: s.OnError,
				Complete: func() { s.OnComplete(); close(completed) },
			})
		go s.sub.Request(1) // races with the worker delivering the result
		<-completed
		if g := s.got(); g != "subscribe next:v complete" || s.overlap.Load() {
			t.Fatalf("signals %q (overlap %v)", g, s.overlap.Load())
		}
	}
}
