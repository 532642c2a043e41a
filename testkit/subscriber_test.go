package testkit_test

import (
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rxbulkhead/bulkhead/testkit"
)

func TestSubscriberRequestsUnboundedByDefault(t *testing.T) {
	p := &manualPublisher[int]{}
	p.Subscribe(testkit.NewTestSubscriber[int]())
	if reqs, _ := p.state(); !slices.Equal(reqs, []int64{math.MaxInt64}) {
		t.Fatalf("requests = %v, want [MaxInt64]", reqs)
	}
}

func TestSubscriberWithInitialRequestZeroRequestsNothingUntilAsked(t *testing.T) {
	p := &manualPublisher[int]{}
	ts := testkit.NewTestSubscriber[int](testkit.InitialRequest(0))
	p.Subscribe(ts)
	if reqs, _ := p.state(); len(reqs) != 0 {
		t.Fatalf("requests = %v before Request, want none", reqs)
	}
	ts.Request(2)
	if reqs, _ := p.state(); !slices.Equal(reqs, []int64{2}) {
		t.Fatalf("requests = %v, want [2]", reqs)
	}
}

func TestRequestsBeforeSubscribeAreReplayedInOrder(t *testing.T) {
	p := &manualPublisher[int]{}
	ts := testkit.NewTestSubscriber[int](testkit.InitialRequest(1))
	ts.Request(3)
	ts.Request(0) // passed on as it is: the publisher must answer with OnError (rule 3.9)
	p.Subscribe(ts)
	if reqs, _ := p.state(); !slices.Equal(reqs, []int64{1, 3, 0}) {
		t.Fatalf("requests = %v, want [1 3 0]", reqs)
	}
}

func TestCancelBeforeSubscribeCancelsOnArrival(t *testing.T) {
	p := &manualPublisher[int]{}
	ts := testkit.NewTestSubscriber[int]()
	ts.Cancel()
	p.Subscribe(ts)
	reqs, cancelled := p.state()
	if cancelled != 1 || len(reqs) != 0 {
		t.Fatalf("cancelled %d times with requests %v, want once and no request", cancelled, reqs)
	}
	if !ts.IsCancelled() || !ts.IsSubscribed() {
		t.Fatalf("IsCancelled=%v IsSubscribed=%v, want both true", ts.IsCancelled(), ts.IsSubscribed())
	}
}

func TestSubscriberRecordsValuesAndCompletion(t *testing.T) {
	ts := testkit.NewTestSubscriber[string]()
	if ts.IsSubscribed() {
		t.Fatal("IsSubscribed before Subscribe")
	}
	sliceSource[string]{values: []string{"a", "b"}}.Subscribe(ts)
	if !ts.IsSubscribed() || !ts.IsComplete() || ts.Err() != nil {
		t.Fatalf("subscribed=%v complete=%v err=%v", ts.IsSubscribed(), ts.IsComplete(), ts.Err())
	}
	if got := ts.Values(); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("Values() = %v", got)
	}
	ts.AssertResult(t, "a", "b")
}

func TestSubscriberDemandLimitsASynchronousSource(t *testing.T) {
	ts := testkit.NewTestSubscriber[int](testkit.InitialRequest(2))
	sliceSource[int]{values: []int{1, 2, 3, 4, 5}}.Subscribe(ts)
	ts.AssertValues(t, 1, 2)
	ts.AssertNotTerminated(t)
	ts.Request(3)
	ts.AssertResult(t, 1, 2, 3, 4, 5)
}

func TestSubscriberRecordsErrors(t *testing.T) {
	ts := testkit.NewTestSubscriber[int]()
	sliceSource[int]{values: []int{1}, err: errBoom}.Subscribe(ts)
	ts.AssertValues(t, 1)
	ts.AssertError(t, errBoom)
	ts.AssertNoViolations(t)
	if ts.IsComplete() {
		t.Fatal("IsComplete after OnError")
	}
}

func TestSubscriberReportsRuleViolations(t *testing.T) {
	tests := []struct {
		name string
		act  func(ts *testkit.TestSubscriber[int], p *manualPublisher[int])
		rule string
	}{
		{"beyond demand", func(ts *testkit.TestSubscriber[int], p *manualPublisher[int]) {
			ts.Request(1)
			p.subscriber().OnNext(1)
			p.subscriber().OnNext(2)
		}, "rule 1.1: OnNext(2) beyond demand (1 requested, 1 delivered before it)"},
		{"next after complete", func(_ *testkit.TestSubscriber[int], p *manualPublisher[int]) {
			p.subscriber().OnComplete()
			p.subscriber().OnNext(1)
		}, "rule 1.7: OnNext(1) after a terminal signal"},
		{"complete after error", func(_ *testkit.TestSubscriber[int], p *manualPublisher[int]) {
			p.subscriber().OnError(errBoom)
			p.subscriber().OnComplete()
		}, "rule 1.7: OnComplete after a terminal signal"},
		{"nil error", func(_ *testkit.TestSubscriber[int], p *manualPublisher[int]) {
			p.subscriber().OnError(nil)
		}, "rule 2.13: OnError(nil)"},
		{"second subscription", func(ts *testkit.TestSubscriber[int], _ *manualPublisher[int]) {
			second := &manualPublisher[int]{}
			second.Subscribe(ts)
			if _, cancelled := second.state(); cancelled != 1 {
				t.Errorf("second subscription cancelled %d times, want once", cancelled)
			}
		}, "rule 2.5"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &manualPublisher[int]{}
			ts := testkit.NewTestSubscriber[int](testkit.InitialRequest(0))
			p.Subscribe(ts)
			tt.act(ts, p)
			vs := ts.Violations()
			if len(vs) != 1 || !strings.Contains(vs[0], tt.rule) {
				t.Fatalf("Violations() = %q, want one citing %q", vs, tt.rule)
			}
			f := runFake(func(tb *fakeTB) { ts.AssertNoViolations(tb) })
			wantFailure(t, f, "rule violation", tt.rule)
		})
	}
}

func TestSubscriberReportsSignalsBeforeOnSubscribe(t *testing.T) {
	ts := testkit.NewTestSubscriber[int]()
	ts.OnNext(1)
	ts.OnComplete()
	vs := ts.Violations()
	if len(vs) != 2 || !strings.Contains(vs[0], "rule 1.9: OnNext(1) before OnSubscribe") || !strings.Contains(vs[1], "rule 1.9: OnComplete") {
		t.Fatalf("Violations() = %q, want two rule 1.9 violations", vs)
	}
}

func TestSubscriberAcceptsSerialSignalsFromDifferentGoroutines(t *testing.T) {
	p := &manualPublisher[int]{}
	ts := testkit.NewTestSubscriber[int]()
	p.Subscribe(ts)
	for i := range 100 {
		done := make(chan struct{})
		go func() {
			defer close(done)
			p.subscriber().OnNext(i)
		}()
		<-done // happens-before: the signals are serial
	}
	p.subscriber().OnComplete()
	ts.AssertNoViolations(t)
	ts.AssertComplete(t)
}

func TestSubscriberDetectsConcurrentSignals(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("needs two Ps for signals to overlap")
	}
	// Two goroutines signal at once, again and again, until their signals
	// overlap; a correct detector must notice at least once.
	for range 20000 {
		p := &manualPublisher[int]{}
		ts := testkit.NewTestSubscriber[int]()
		p.Subscribe(ts)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for g := range 2 {
			wg.Go(func() {
				<-start
				for i := range 50 {
					p.subscriber().OnNext(g*100 + i)
				}
			})
		}
		close(start)
		wg.Wait()
		for _, v := range ts.Violations() {
			if strings.Contains(v, "rule 1.3") {
				return
			}
		}
	}
	t.Fatal("two goroutines signalled concurrently 20000 times and no rule 1.3 violation was recorded")
}

func TestAwaitReturnsWhenAnAsynchronousSourceTerminates(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &manualPublisher[int]{}
		ts := testkit.NewTestSubscriber[int]()
		p.Subscribe(ts)
		go func() {
			time.Sleep(time.Second)
			p.subscriber().OnNext(1)
			time.Sleep(time.Second)
			p.subscriber().OnNext(2)
			p.subscriber().OnComplete()
		}()
		if !ts.AwaitCount(1, time.Minute) {
			t.Fatal("AwaitCount(1) = false")
		}
		ts.AssertValues(t, 1)
		if !ts.Await(time.Minute) {
			t.Fatal("Await = false")
		}
		ts.AssertResult(t, 1, 2)
	})
}

func TestAwaitTimesOutOnASilentSource(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &manualPublisher[int]{}
		ts := testkit.NewTestSubscriber[int]()
		p.Subscribe(ts)
		start := time.Now()
		if ts.Await(3 * time.Second) {
			t.Fatal("Await = true on a source that never terminates")
		}
		if ts.AwaitCount(1, time.Second) {
			t.Fatal("AwaitCount(1) = true on a source that never emits")
		}
		if d := time.Since(start); d != 4*time.Second {
			t.Fatalf("waited %v of bubble time, want 4s", d)
		}
	})
}

func TestAwaitCountStopsAtTermination(t *testing.T) {
	ts := testkit.NewTestSubscriber[int]()
	sliceSource[int]{values: []int{1}}.Subscribe(ts)
	if ts.AwaitCount(5, time.Hour) { // returns at once: the source completed
		t.Fatal("AwaitCount(5) = true with one value")
	}
}

// The assertions must fail when they should, showing what was received.

func TestAssertionsFailWithWhatWasReceived(t *testing.T) {
	completed := func() *testkit.TestSubscriber[int] {
		ts := testkit.NewTestSubscriber[int]()
		sliceSource[int]{values: []int{1, 2}}.Subscribe(ts)
		return ts
	}
	failed := func() *testkit.TestSubscriber[int] {
		ts := testkit.NewTestSubscriber[int]()
		sliceSource[int]{values: []int{7}, err: errBoom}.Subscribe(ts)
		return ts
	}
	running := func() *testkit.TestSubscriber[int] {
		ts := testkit.NewTestSubscriber[int]()
		(&manualPublisher[int]{}).Subscribe(ts)
		return ts
	}
	tests := []struct {
		name   string
		assert func(tb testing.TB) bool
		want   []string
	}{
		{"values differ", func(tb testing.TB) bool { return completed().AssertValues(tb, 1, 2, 3) },
			[]string{"values = [1 2], want [1 2 3]", "received: OnSubscribe, OnNext(1), OnNext(2), OnComplete [2 value(s), completed]"}},
		{"values expected, none came", func(tb testing.TB) bool { return running().AssertValues(tb, 1) },
			[]string{"values = [], want [1]", "received: OnSubscribe [0 value(s), not terminated]"}},
		{"no values expected", func(tb testing.TB) bool { return completed().AssertNoValues(tb) },
			[]string{"got 2 value(s), want none", "OnNext(2)"}},
		{"complete but errored", func(tb testing.TB) bool { return failed().AssertComplete(tb) },
			[]string{`terminated with error "boom", want completion`, "OnError(boom)"}},
		{"complete but running", func(tb testing.TB) bool { return running().AssertComplete(tb) },
			[]string{"not completed", "not terminated"}},
		{"error but completed", func(tb testing.TB) bool { return completed().AssertError(tb, errBoom) },
			[]string{`completed, want an error matching "boom"`}},
		{"error but running", func(tb testing.TB) bool { return running().AssertError(tb, errBoom) },
			[]string{`no error, want one matching "boom"`}},
		{"other error", func(tb testing.TB) bool { return failed().AssertError(tb, errOther) },
			[]string{`error "boom" (*errors.errorString) does not match "other" (errors.Is)`}},
		{"terminated", func(tb testing.TB) bool { return completed().AssertNotTerminated(tb) },
			[]string{"terminated, want no terminal signal yet", "OnComplete"}},
		{"result with error", func(tb testing.TB) bool { return failed().AssertResult(tb, 7) },
			[]string{"want completion"}},
		{"result with other values", func(tb testing.TB) bool { return completed().AssertResult(tb, 2, 1) },
			[]string{"values = [1 2], want [2 1]"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var ok bool
			f := runFake(func(tb *fakeTB) { ok = tt.assert(tb) })
			if ok {
				t.Error("the assertion returned true")
			}
			wantFailure(t, f, append([]string{"testkit: TestSubscriber: "}, tt.want...)...)
		})
	}
}

func TestAssertionsPassOnMatchingState(t *testing.T) {
	f := runFake(func(tb *fakeTB) {
		ts := testkit.NewTestSubscriber[[]int]()
		sliceSource[[]int]{values: [][]int{{1}, {2, 3}}}.Subscribe(ts)
		ts.AssertValues(tb, []int{1}, []int{2, 3}) // DeepEqual, not ==
		ts.AssertComplete(tb)
		ts.AssertResult(tb, []int{1}, []int{2, 3})
		ts.AssertNoViolations(tb)

		empty := testkit.NewTestSubscriber[int]()
		(&manualPublisher[int]{}).Subscribe(empty)
		empty.AssertNoValues(tb)
		empty.AssertValues(tb)
		empty.AssertNotTerminated(tb)
	})
	wantPass(t, f)
}

func TestFailureMessageShortensLongStreams(t *testing.T) {
	values := make([]int, 100)
	ts := testkit.NewTestSubscriber[int]()
	sliceSource[int]{values: values}.Subscribe(ts)
	f := runFake(func(tb *fakeTB) { ts.AssertNoValues(tb) })
	wantFailure(t, f, "... (82 more)", "[100 value(s), completed]")
}

func TestSubscriberReportsNilSubscription(t *testing.T) {
	ts := testkit.NewTestSubscriber[int]()
	ts.OnSubscribe(nil)
	if vs := ts.Violations(); len(vs) != 1 || !strings.Contains(vs[0], "rule 2.13: OnSubscribe(nil)") {
		t.Fatalf("Violations() = %q, want one citing rule 2.13", vs)
	}
	if ts.IsSubscribed() {
		t.Fatal("IsSubscribed after OnSubscribe(nil)")
	}
}

func TestSubscriberDemandSaturatesAtMaxInt64(t *testing.T) {
	p := &manualPublisher[int]{}
	ts := testkit.NewTestSubscriber[int](testkit.InitialRequest(math.MaxInt64 - 1))
	p.Subscribe(ts)
	ts.Request(math.MaxInt64) // would overflow without saturation
	for i := range 3 {
		p.subscriber().OnNext(i)
	}
	ts.AssertNoViolations(t)
	ts.AssertValues(t, 0, 1, 2)
}
