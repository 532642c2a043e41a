package tck_test

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reactivex/rxgo/v2"

	bulkhead "github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/flowable"
	"github.com/rxbulkhead/bulkhead/testkit"
	"github.com/rxbulkhead/bulkhead/testkit/tck"
)

var errBoom = errors.New("boom")

// source is one publisher under test and what the suite may expect of it.
type source struct {
	name string
	pub  func() flowable.Publisher[int]
	opts tck.Options
}

// sources lists every flowable source, in each of its shapes.
func sources() []source {
	return []source{
		{"Just", func() flowable.Publisher[int] { return flowable.Just(1, 2, 3) }, tck.Options{Elements: 3}},
		{"FromSlice", func() flowable.Publisher[int] { return flowable.FromSlice([]int{1, 2, 3, 4, 5}) }, tck.Options{Elements: 5}},
		{"FromSlice_empty", func() flowable.Publisher[int] { return flowable.FromSlice[int](nil) }, tck.Options{}},
		{"Range", func() flowable.Publisher[int] { return flowable.Range(0, 10) }, tck.Options{Elements: 10}},
		{"Range_empty", func() flowable.Publisher[int] { return flowable.Range(5, 0) }, tck.Options{}},
		{"Empty", flowable.Empty[int], tck.Options{}},
		{"Error", func() flowable.Publisher[int] { return flowable.Error[int](errBoom) }, tck.Options{Terminal: tck.FailsAtOnce, ErrorIs: errBoom}},
		{"Never", flowable.Never[int], tck.Options{Terminal: tck.Endless}},
		{"Defer", func() flowable.Publisher[int] {
			return flowable.Defer(func() flowable.Publisher[int] { return flowable.Range(0, 4) })
		}, tck.Options{Elements: 4}},
		{"Create", func() flowable.Publisher[int] { return createCounting(5, nil) }, tck.Options{Elements: 5}},
		{"Create_failing", func() flowable.Publisher[int] { return createCounting(2, errBoom) }, tck.Options{Elements: 2, Terminal: tck.Fails, ErrorIs: errBoom}},
		{"Create_endless", func() flowable.Publisher[int] { return createCounting(-1, nil) }, tck.Options{Elements: tck.Infinite, Terminal: tck.Endless}},
		{"FromObservable", func() flowable.Publisher[int] { return flowable.FromObservable[int](rxgo.Just(1, 2, 3)()) }, tck.Options{Elements: 3}},
		{"FromObservable_error", func() flowable.Publisher[int] { return flowable.FromObservable[int](rxgo.Thrown(errBoom)) }, tck.Options{Terminal: tck.Fails, ErrorIs: errBoom}},
		{"FromObservable_of_ToObservable", func() flowable.Publisher[int] {
			return flowable.FromObservable[int](flowable.ToObservable(flowable.Range(0, 5)))
		}, tck.Options{Elements: 5}},
	}
}

// createCounting emits 0, 1, ... n-1 (n < 0: without end) from a goroutine
// of its own, with Emitter.Next, then fails with err or completes. The
// goroutine returns as soon as the subscription ends.
func createCounting(n int, err error) flowable.Publisher[int] {
	return flowable.Create(func(e flowable.Emitter[int]) {
		go func() {
			for i := 0; n < 0 || i < n; i++ {
				if !e.Next(i) {
					return
				}
			}
			if err != nil {
				e.Error(err)
				return
			}
			e.Complete()
		}()
	})
}

// TestEverySourceFollowsTheRules runs the rule suite over every flowable
// source.
func TestEverySourceFollowsTheRules(t *testing.T) {
	for _, src := range sources() {
		t.Run(src.name, func(t *testing.T) {
			res := tck.VerifyPublisher(t, func(*testing.T) flowable.Publisher[int] { return src.pub() }, src.opts)
			t.Logf("%s: %s", src.name, res)
		})
	}
}

// bulkheadSources are the sources run through flowable.Bulkhead.
func bulkheadSources() []source {
	keep := map[string]bool{"Just": true, "Range": true, "Empty": true, "Error": true, "Never": true, "Create": true, "Create_endless": true, "FromObservable": true}
	var out []source
	for _, s := range sources() {
		if keep[s.name] {
			out = append(out, s)
		}
	}
	return out
}

// newPartner returns a Semaphore checked for leaked permits at the end of
// the check.
func newPartner(t *testing.T, cfg bulkhead.Config) *bulkhead.Semaphore {
	t.Helper()
	sem, err := bulkhead.New("partner", cfg)
	if err != nil {
		t.Fatal(err)
	}
	testkit.CheckPermits(t, sem)
	return sem
}

// TestBulkheadWithFreePermitFollowsTheRules: the permit is granted at once
// and the source is subscribed on the subscribing goroutine.
func TestBulkheadWithFreePermitFollowsTheRules(t *testing.T) {
	for _, src := range bulkheadSources() {
		t.Run(src.name, func(t *testing.T) {
			res := tck.VerifyPublisher(t, func(t *testing.T) flowable.Publisher[int] {
				sem := newPartner(t, bulkhead.Config{MaxConcurrentCalls: 1})
				return flowable.Bulkhead(sem, src.pub())
			}, src.opts)
			t.Logf("Bulkhead(free, %s): %s", src.name, res)
		})
	}
}

// grantAfterSubscribe holds the only permit of sem while a subscriber
// subscribes, then gives it back from another goroutine: the subscription
// starts pending and is granted concurrently with what the subscriber
// does next (its first requests, made from OnSubscribe, are buffered).
type grantAfterSubscribe struct {
	flowable.Publisher[int]
	sem  *bulkhead.Semaphore
	once sync.Once
	wg   *sync.WaitGroup
}

func (g *grantAfterSubscribe) Subscribe(s flowable.Subscriber[int]) {
	defer g.once.Do(func() { g.wg.Go(g.sem.ReleasePermission) })
	g.Publisher.Subscribe(s)
}

// onFirstCall runs then, on a goroutine of its own, right after the
// subscriber's first Request or Cancel returns (or, if that call is made
// from OnSubscribe, once Subscribe has returned, so that the permit has
// been requested): that call is made while the permit is pending (a
// Request(0) while pending, a Cancel that withdraws), and the outcome
// (then) races with the calls that follow.
type onFirstCall struct {
	flowable.Publisher[int]
	then func()
	wg   *sync.WaitGroup

	mu         sync.Mutex
	subscribed bool // Subscribe returned
	called     bool // the subscriber called Request or Cancel
	once       sync.Once
}

func (f *onFirstCall) fire() { f.once.Do(func() { f.wg.Go(f.then) }) }

// call records a Request or Cancel and fires if Subscribe has returned.
func (f *onFirstCall) call() {
	f.mu.Lock()
	f.called = true
	ready := f.subscribed
	f.mu.Unlock()
	if ready {
		f.fire()
	}
}

func (f *onFirstCall) Subscribe(s flowable.Subscriber[int]) {
	if s == nil {
		defer f.fire() // the operator panics; the permit must still come back
		f.Publisher.Subscribe(nil)
		return
	}
	f.Publisher.Subscribe(&firstCallSubscriber{Subscriber: s, f: f})
	f.mu.Lock()
	f.subscribed = true
	called := f.called
	f.mu.Unlock()
	if called {
		f.fire()
	}
}

type firstCallSubscriber struct {
	flowable.Subscriber[int]
	f *onFirstCall
}

func (s *firstCallSubscriber) OnSubscribe(sub flowable.Subscription) {
	s.Subscriber.OnSubscribe(&firstCallSubscription{Subscription: sub, f: s.f})
}

type firstCallSubscription struct {
	flowable.Subscription
	f *onFirstCall
}

func (s *firstCallSubscription) Request(n int64) {
	s.Subscription.Request(n)
	s.f.call()
}

func (s *firstCallSubscription) Cancel() {
	s.Subscription.Cancel()
	s.f.call()
}

// heldPartner returns a one-permit bulkhead whose permit is taken, with a
// WaitGroup the check waits for before the permit-leak check runs.
func heldPartner(t *testing.T, opts ...bulkhead.Option) (*bulkhead.Semaphore, *sync.WaitGroup) {
	t.Helper()
	sem, err := bulkhead.New("partner", bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Hour, MaxQueuedCalls: bulkhead.Unbounded}, opts...)
	if err != nil {
		t.Fatal(err)
	}
	testkit.CheckPermits(t, sem)
	if !sem.TryAcquirePermission() {
		t.Fatal("the permit of a new bulkhead is not free")
	}
	var wg sync.WaitGroup
	t.Cleanup(wg.Wait) // runs before CheckPermits
	return sem, &wg
}

// TestBulkheadWithPendingThenGrantedPermitFollowsTheRules: the permit is
// pending when the subscriber gets OnSubscribe and granted from another
// goroutine, either right after Subscribe returns or right after the
// subscriber's first Request or Cancel.
func TestBulkheadWithPendingThenGrantedPermitFollowsTheRules(t *testing.T) {
	for _, src := range bulkheadSources() {
		t.Run("GrantedAfterSubscribe/"+src.name, func(t *testing.T) {
			res := tck.VerifyPublisher(t, func(t *testing.T) flowable.Publisher[int] {
				sem, wg := heldPartner(t)
				return &grantAfterSubscribe{Publisher: flowable.Bulkhead(sem, src.pub()), sem: sem, wg: wg}
			}, src.opts)
			t.Logf("Bulkhead(pending, granted after Subscribe, %s): %s", src.name, res)
		})
		t.Run("GrantedAfterFirstCall/"+src.name, func(t *testing.T) {
			opts := src.opts
			if opts.Terminal == tck.FailsAtOnce {
				// The source fails at once, but only once it is subscribed,
				// after the subscriber's first call.
				opts.Terminal = tck.Fails
			}
			res := tck.VerifyPublisher(t, func(t *testing.T) flowable.Publisher[int] {
				sem, wg := heldPartner(t)
				return &onFirstCall{Publisher: flowable.Bulkhead(sem, src.pub()), then: sem.ReleasePermission, wg: wg}
			}, opts)
			t.Logf("Bulkhead(pending, granted after the first call, %s): %s", src.name, res)
		})
	}
}

// TestBulkheadWhoseWaitExpiresFollowsTheRules: the permit is pending and the
// wait expires (WaitTimeout) right after the subscriber's first call: the
// subscriber gets OnError(*bulkhead.FullError) and the source is never
// subscribed.
func TestBulkheadWhoseWaitExpiresFollowsTheRules(t *testing.T) {
	expiredOpts := tck.Options{Terminal: tck.Fails, ErrorIs: bulkhead.ErrBulkheadFull}
	for _, src := range bulkheadSources() {
		t.Run(src.name, func(t *testing.T) {
			res := tck.VerifyPublisher(t, func(t *testing.T) flowable.Publisher[int] {
				clock := testkit.NewVirtualClock(time.Unix(0, 0))
				sem, wg := heldPartner(t, bulkhead.WithClock(clock))
				t.Cleanup(sem.ReleasePermission) // after wg.Wait, before CheckPermits
				return &onFirstCall{Publisher: flowable.Bulkhead(sem, src.pub()), then: func() { clock.Advance(time.Hour) }, wg: wg}
			}, expiredOpts)
			t.Logf("Bulkhead(pending, wait expired, %s): %s", src.name, res)
		})
	}
}

// TestBulkheadThatRejectsFollowsTheRules: the bulkhead is full and does
// not wait (NoWait), or its queue is full (QueueFull): OnSubscribe then
// OnError(*bulkhead.FullError), and the source is never subscribed.
func TestBulkheadThatRejectsFollowsTheRules(t *testing.T) {
	rejectedOpts := tck.Options{Terminal: tck.FailsAtOnce, ErrorIs: bulkhead.ErrBulkheadFull}
	for _, src := range bulkheadSources() {
		t.Run("NoWait/"+src.name, func(t *testing.T) {
			res := tck.VerifyPublisher(t, func(t *testing.T) flowable.Publisher[int] {
				sem := newPartner(t, bulkhead.Config{MaxConcurrentCalls: 1})
				if !sem.TryAcquirePermission() {
					t.Fatal("the permit of a new bulkhead is not free")
				}
				t.Cleanup(sem.ReleasePermission) // runs before CheckPermits
				return flowable.Bulkhead(sem, src.pub())
			}, rejectedOpts)
			t.Logf("Bulkhead(rejected: no wait, %s): %s", src.name, res)
		})
	}
	t.Run("QueueFull/Range", func(t *testing.T) {
		res := tck.VerifyPublisher(t, func(t *testing.T) flowable.Publisher[int] {
			sem := newPartner(t, bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Hour, MaxQueuedCalls: 1})
			if !sem.TryAcquirePermission() {
				t.Fatal("the permit of a new bulkhead is not free")
			}
			queued := sem.AcquirePermissionAsync()
			t.Cleanup(func() {
				if !queued.Cancel() {
					t.Error("the queued acquisition was decided during the check")
				}
				sem.ReleasePermission()
			})
			return flowable.Bulkhead(sem, flowable.Range(0, 10))
		}, rejectedOpts)
		t.Logf("Bulkhead(rejected: queue full, Range): %s", res)
	})
}

// TestRejectionNeverSubscribesTheSource pins what the rule suite cannot see
// from outside: a rejected subscription does not touch its source.
func TestRejectionNeverSubscribesTheSource(t *testing.T) {
	sem := newPartner(t, bulkhead.Config{MaxConcurrentCalls: 1})
	if !sem.TryAcquirePermission() {
		t.Fatal("the permit of a new bulkhead is not free")
	}
	defer sem.ReleasePermission()
	subscribed := false
	src := flowable.Defer(func() flowable.Publisher[int] {
		subscribed = true
		return flowable.Range(0, 3)
	})
	ts := testkit.NewTestSubscriber[int]()
	flowable.Bulkhead(sem, src).Subscribe(ts)
	ts.AssertError(t, bulkhead.ErrBulkheadFull)
	ts.AssertNoViolations(t)
	if subscribed {
		t.Error("the source was subscribed although the bulkhead rejected the call")
	}
	if !strings.Contains(ts.Err().Error(), "partner") {
		t.Errorf("the rejection %q does not name the bulkhead", ts.Err())
	}
}
