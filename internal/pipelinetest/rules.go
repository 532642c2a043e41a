package pipelinetest

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	bulkhead "github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/operator"
	"github.com/rxbulkhead/bulkhead/testkit"
)

var (
	noWait   = bulkhead.Config{MaxConcurrentCalls: 1}
	queueing = bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Hour, MaxQueuedCalls: bulkhead.Unbounded}
)

// want is what a scenario expects, the same for every kind.
type want struct {
	values     int   // values the consumer received (kinds with values only)
	err        error // errors.Is target of the consumer's error; nil: none
	ended      bool  // the consumer saw the end (terminal signal, channel closed)
	subscribed int32 // subscriptions of the source
	finished   int   // CallFinished events: permits given back with FinishCall
	cancelled  int   // CallCancelled events: acquisitions withdrawn
}

// scenario is one row of the table.
type scenario struct {
	name string
	cfg  bulkhead.Config
	// full: another call holds the only permit until play (or the end of
	// the run) gives it back.
	full bool
	// values: the scenario needs a kind that delivers values.
	values bool
	source Behaviour
	play   func(other *otherCall, r Run)
	want   func(k Kind) want
}

var scenarios = []scenario{
	{
		name:   "source completes: FinishCall",
		cfg:    noWait,
		source: Behaviour{Value: true},
		play:   func(*otherCall, Run) {},
		want:   func(k Kind) want { return want{values: ifValues(k, 1), ended: true, subscribed: 1, finished: 1} },
	},
	{
		name:   "source fails: FinishCall, error passed on",
		cfg:    noWait,
		source: Behaviour{Err: ErrBoom},
		play:   func(*otherCall, Run) {},
		want:   func(Kind) want { return want{err: ErrBoom, ended: true, subscribed: 1, finished: 1} },
	},
	{
		name: "bulkhead full: rejected, source never subscribed",
		cfg:  noWait,
		full: true,
		play: func(*otherCall, Run) {},
		want: func(Kind) want { return want{err: bulkhead.ErrBulkheadFull, ended: true} },
	},
	{
		name: "wait expires: rejected, source never subscribed",
		cfg:  bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Second, MaxQueuedCalls: bulkhead.Unbounded},
		full: true,
		play: func(*otherCall, Run) { time.Sleep(time.Second) }, // fake time
		want: func(Kind) want { return want{err: bulkhead.ErrBulkheadFull, ended: true} },
	},
	{
		name:   "granted after a wait: runs, FinishCall",
		cfg:    queueing,
		full:   true,
		source: Behaviour{Value: true},
		play:   func(other *otherCall, _ Run) { other.end() },
		want:   func(k Kind) want { return want{values: ifValues(k, 1), ended: true, subscribed: 1, finished: 1} },
	},
	{
		name: "cancelled while pending: withdrawn, source never subscribed",
		cfg:  queueing,
		full: true,
		play: func(other *otherCall, r Run) {
			r.Cancel()
			synctest.Wait()
			other.end() // the permit must not go to the withdrawn call
		},
		want: func(Kind) want { return want{cancelled: 1} },
	},
	{
		name:   "cancelled after subscribe, before any value: ReleasePermission",
		cfg:    noWait,
		source: Behaviour{Hold: true},
		play:   func(_ *otherCall, r Run) { r.Cancel() },
		want:   func(Kind) want { return want{subscribed: 1} },
	},
	{
		name:   "cancelled after a value: FinishCall",
		cfg:    noWait,
		values: true,
		source: Behaviour{Value: true, Hold: true},
		play:   func(_ *otherCall, r Run) { r.Cancel() },
		want:   func(Kind) want { return want{values: 1, subscribed: 1, finished: 1} },
	},
}

// Rules runs every scenario through every kind, each in a testing/synctest
// bubble, and checks the same outcome. Every run ends with no permit held
// and nobody queued (testkit.CheckPermits).
func Rules(t *testing.T, kinds ...Kind) {
	t.Helper()
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			for _, k := range kinds {
				if sc.values && !k.HasValues {
					continue
				}
				t.Run(k.Name, func(t *testing.T) {
					synctest.Test(t, func(t *testing.T) { sc.run(t, k) })
				})
			}
		})
	}
}

func (sc scenario) run(t *testing.T, k Kind) {
	b, err := bulkhead.New("partner", sc.cfg)
	if err != nil {
		t.Fatal(err)
	}
	testkit.CheckPermits(t, b)
	ev := testkit.RecordEvents(t, b)
	other := &otherCall{b: b}
	if sc.full {
		other.start()
	}
	s := &Script{Behaviour: sc.source}
	r := k.Start(operator.Of(b), s)
	synctest.Wait()
	sc.play(other, r)
	synctest.Wait()
	check(t, k, sc.want(k), s, r, ev)
	other.end()
}

// otherCall is another call that holds the only permit, with
// ReleasePermission (no event) when it ends.
type otherCall struct {
	b       *bulkhead.Semaphore
	holding bool
}

func (o *otherCall) start() {
	if !o.b.TryAcquirePermission() {
		panic("the other call found no free permit")
	}
	o.holding = true
}

// end gives the permit back if the call holds it; it is idempotent.
func (o *otherCall) end() {
	if o.holding {
		o.holding = false
		o.b.ReleasePermission()
	}
}

func ifValues(k Kind, n int) int {
	if k.HasValues {
		return n
	}
	return 0
}

func check(t *testing.T, k Kind, w want, s *Script, r Run, ev *testkit.EventLog) {
	t.Helper()
	values, err, ended := r.Result()
	if k.HasValues && values != w.values {
		t.Errorf("consumer got %d values, want %d", values, w.values)
	}
	if (w.err == nil) != (err == nil) || (w.err != nil && !errors.Is(err, w.err)) {
		t.Errorf("consumer got error %v, want %v", err, w.err)
	}
	if k.AlwaysEnds {
		if !ended {
			t.Error("the subscription did not end (rxgo: the channel is still open)")
		}
	} else if ended != w.ended {
		t.Errorf("consumer saw a terminal signal: %v, want %v", ended, w.ended)
	}
	if got := s.subscribed.Load(); got != w.subscribed {
		t.Errorf("source subscribed %d times, want %d", got, w.subscribed)
	}
	if got := ev.Count(bulkhead.CallFinished); got != w.finished {
		t.Errorf("%d permit(s) given back with FinishCall, want %d", got, w.finished)
	}
	if got := ev.Count(bulkhead.CallCancelled); got != w.cancelled {
		t.Errorf("%d acquisition(s) withdrawn, want %d", got, w.cancelled)
	}
}
