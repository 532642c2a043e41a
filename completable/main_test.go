package completable_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	bulkhead "github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/completable"
	"github.com/rxbulkhead/bulkhead/testkit"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// defaultTestTimeout bounds waits for asynchronous signals; it only expires
// when a test fails (inside a synctest bubble it is fake time).
const defaultTestTimeout = 10 * time.Second

// recorder is an Observer that records every signal and checks the rules a
// Completable must follow towards it: OnSubscribe first and once, signals
// never overlap, at most one terminal signal, OnError never with nil.
type recorder struct {
	t testing.TB
	// onSubscribe, if set, runs inside OnSubscribe (to dispose there).
	onSubscribe func(d completable.Disposable)
	// onTerminal, if set, runs inside OnComplete and OnError, first.
	onTerminal func()

	mu        sync.Mutex
	d         completable.Disposable
	completed int
	errs      []error
	violation string

	inSignal atomic.Int32
	done     chan struct{} // closed by the first terminal signal
}

func newRecorder(t testing.TB) *recorder {
	return &recorder{t: t, done: make(chan struct{})}
}

func (r *recorder) enter(name string) {
	if r.inSignal.Add(1) != 1 {
		r.fail("overlapping signal " + name)
	}
}

func (r *recorder) leave() { r.inSignal.Add(-1) }

func (r *recorder) fail(msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.violation == "" {
		r.violation = msg
	}
}

func (r *recorder) OnSubscribe(d completable.Disposable) {
	r.enter("OnSubscribe")
	defer r.leave()
	r.mu.Lock()
	if r.d != nil {
		r.violation = "OnSubscribe twice"
	}
	if d == nil {
		r.violation = "OnSubscribe(nil)"
	}
	r.d = d
	r.mu.Unlock()
	if r.onSubscribe != nil {
		r.onSubscribe(d)
	}
}

func (r *recorder) terminal(err error) {
	if r.onTerminal != nil {
		r.onTerminal()
	}
	r.mu.Lock()
	first := r.completed == 0 && len(r.errs) == 0
	switch {
	case r.d == nil && r.violation == "":
		r.violation = "terminal signal before OnSubscribe"
	case !first && r.violation == "":
		r.violation = "second terminal signal"
	}
	if err != nil {
		r.errs = append(r.errs, err)
	} else {
		r.completed++
	}
	r.mu.Unlock()
	if first {
		close(r.done)
	}
}

func (r *recorder) OnComplete() {
	r.enter("OnComplete")
	defer r.leave()
	r.terminal(nil)
}

func (r *recorder) OnError(err error) {
	r.enter("OnError")
	defer r.leave()
	if err == nil {
		r.fail("OnError(nil)")
		err = fmt.Errorf("nil error")
	}
	r.terminal(err)
}

// Dispose disposes the subscription the recorder was handed.
func (r *recorder) Dispose() {
	r.mu.Lock()
	d := r.d
	r.mu.Unlock()
	d.Dispose()
}

func (r *recorder) disposable() completable.Disposable {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.d
}

// wait waits for a terminal signal.
func (r *recorder) wait() {
	r.t.Helper()
	select {
	case <-r.done:
	case <-time.After(defaultTestTimeout):
		r.t.Fatal("no terminal signal")
	}
}

// result returns what was recorded, failing the test on a rule violation.
func (r *recorder) result() (completed bool, err error) {
	r.t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.violation != "" {
		r.t.Errorf("rule violation: %s", r.violation)
	}
	if len(r.errs) > 0 {
		err = r.errs[0]
	}
	return r.completed > 0, err
}

func (r *recorder) terminated() bool {
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

// newBulkhead returns a Semaphore named "partner" that fails the test if a
// permit is still held or a call still queued when the test ends.
func newBulkhead(t testing.TB, cfg bulkhead.Config, opts ...bulkhead.Option) *bulkhead.Semaphore {
	t.Helper()
	b, err := bulkhead.New("partner", cfg, opts...)
	if err != nil {
		t.Fatal(err)
	}
	testkit.CheckPermits(t, b)
	return b
}

// probe wraps a Completable and counts its subscriptions and the disposals
// of those subscriptions.
type probe struct {
	src        completable.Completable
	subscribed atomic.Int32
	disposed   atomic.Int32
}

func newProbe(src completable.Completable) *probe { return &probe{src: src} }

func (p *probe) Subscribe(o completable.Observer) {
	p.subscribed.Add(1)
	p.src.Subscribe(&probeObserver{Observer: o, p: p})
}

type probeObserver struct {
	completable.Observer
	p *probe
}

func (o *probeObserver) OnSubscribe(d completable.Disposable) {
	o.Observer.OnSubscribe(&probeDisposable{Disposable: d, p: o.p})
}

type probeDisposable struct {
	completable.Disposable
	p *probe
}

func (d *probeDisposable) Dispose() {
	d.p.disposed.Add(1)
	d.Disposable.Dispose()
}

// held returns a Completable whose call blocks until the test sends its
// result on the returned channel or the subscription is disposed; started
// receives one value per call that began.
func held() (c completable.Completable, result chan error, started chan struct{}) {
	result = make(chan error)
	started = make(chan struct{}, 100)
	c = completable.FromFunc(func(ctx context.Context) error {
		started <- struct{}{}
		select {
		case err := <-result:
			return err
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	return c, result, started
}

// manual is a source that signals only when the test says so, on the
// test's goroutine: subscribe it, then call complete or fail.
type manual struct {
	mu       sync.Mutex
	o        completable.Observer
	disposed atomic.Int32
}

func (m *manual) Subscribe(o completable.Observer) {
	m.mu.Lock()
	m.o = o
	m.mu.Unlock()
	o.OnSubscribe(disposeCounter{&m.disposed})
}

func (m *manual) observer() completable.Observer {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.o
}

type disposeCounter struct{ n *atomic.Int32 }

func (d disposeCounter) Dispose()         { d.n.Add(1) }
func (d disposeCounter) IsDisposed() bool { return d.n.Load() > 0 }
