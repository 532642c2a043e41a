package operator_test

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

// want is what a scenario expects, the same for every type.
type want struct {
	values     int   // values the consumer received (types with values only)
	err        error // errors.Is target of the consumer's error; nil: none
	ended      bool  // the consumer saw the end (terminal signal, channel closed)
	subscribed int32 // subscriptions of the source
	finished   int   // CallFinished events: permits given back with FinishCall
	cancelled  int   // CallCancelled events: acquisitions withdrawn
}

// TestEveryOperatorGivesPermitsBackByTheSameRules runs each scenario
// through each of the five operators, in a testing/synctest bubble, and
// checks the same outcome: what the consumer saw, whether the source was
// subscribed, and how the permit came back (FinishCall publishes
// CallFinished, ReleasePermission publishes nothing, a withdrawal publishes
// CallCancelled). Every run ends with no permit held and nobody queued
// (testkit.CheckPermits).
func TestEveryOperatorGivesPermitsBackByTheSameRules(t *testing.T) {
	scenarios := []struct {
		name string
		cfg  bulkhead.Config
		// full: another call holds the only permit until play (or the end
		// of the run) gives it back.
		full bool
		// values: the scenario needs a type that delivers values.
		values bool
		source behaviour
		play   func(other *otherCall, r run)
		want   func(k kind) want
	}{
		{
			name:   "source completes: FinishCall",
			cfg:    noWait,
			source: behaviour{value: true},
			play:   func(*otherCall, run) {},
			want:   func(k kind) want { return want{values: ifValues(k, 1), ended: true, subscribed: 1, finished: 1} },
		},
		{
			name:   "source fails: FinishCall, error passed on",
			cfg:    noWait,
			source: behaviour{err: errBoom},
			play:   func(*otherCall, run) {},
			want:   func(kind) want { return want{err: errBoom, ended: true, subscribed: 1, finished: 1} },
		},
		{
			name: "bulkhead full: rejected, source never subscribed",
			cfg:  noWait,
			full: true,
			play: func(*otherCall, run) {},
			want: func(kind) want { return want{err: bulkhead.ErrBulkheadFull, ended: true} },
		},
		{
			name: "wait expires: rejected, source never subscribed",
			cfg:  bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Second, MaxQueuedCalls: bulkhead.Unbounded},
			full: true,
			play: func(*otherCall, run) { time.Sleep(time.Second) }, // fake time
			want: func(kind) want { return want{err: bulkhead.ErrBulkheadFull, ended: true} },
		},
		{
			name:   "granted after a wait: runs, FinishCall",
			cfg:    queueing,
			full:   true,
			source: behaviour{value: true},
			play:   func(other *otherCall, _ run) { other.end() },
			want:   func(k kind) want { return want{values: ifValues(k, 1), ended: true, subscribed: 1, finished: 1} },
		},
		{
			name: "cancelled while pending: withdrawn, source never subscribed",
			cfg:  queueing,
			full: true,
			play: func(other *otherCall, r run) {
				r.cancel()
				synctest.Wait()
				other.end() // the permit must not go to the withdrawn call
			},
			want: func(kind) want { return want{cancelled: 1} },
		},
		{
			name:   "cancelled after subscribe, before any value: ReleasePermission",
			cfg:    noWait,
			source: behaviour{hold: true},
			play:   func(_ *otherCall, r run) { r.cancel() },
			want:   func(kind) want { return want{subscribed: 1} },
		},
		{
			name:   "cancelled after a value: FinishCall",
			cfg:    noWait,
			values: true,
			source: behaviour{value: true, hold: true},
			play:   func(_ *otherCall, r run) { r.cancel() },
			want:   func(kind) want { return want{values: 1, subscribed: 1, finished: 1} },
		},
	}
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			for _, k := range kinds {
				if sc.values && !k.hasValues {
					continue
				}
				t.Run(k.name, func(t *testing.T) {
					synctest.Test(t, func(t *testing.T) {
						b, ev := newBulkhead(t, sc.cfg)
						other := &otherCall{b: b}
						if sc.full {
							other.start()
						}
						s := &script{behaviour: sc.source}
						r := k.start(operator.Of(b), s)
						synctest.Wait()
						sc.play(other, r)
						synctest.Wait()
						check(t, k, sc.want(k), s, r, ev)
						other.end()
					})
				})
			}
		})
	}
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

func ifValues(k kind, n int) int {
	if k.hasValues {
		return n
	}
	return 0
}

func check(t *testing.T, k kind, w want, s *script, r run, ev *testkit.EventLog) {
	t.Helper()
	values, err, ended := r.result()
	if k.hasValues && values != w.values {
		t.Errorf("consumer got %d values, want %d", values, w.values)
	}
	if (w.err == nil) != (err == nil) || (w.err != nil && !errors.Is(err, w.err)) {
		t.Errorf("consumer got error %v, want %v", err, w.err)
	}
	if _, rx := r.(*rxRun); rx {
		// rxgo has one end signal, the channel closing, for completion
		// and cancellation alike: every run must have closed it.
		if !ended {
			t.Error("the rxgo channel is still open")
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
