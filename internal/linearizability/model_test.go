package linearizability_test

import (
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	bulkhead "github.com/rxbulkhead/bulkhead"
	lin "github.com/rxbulkhead/bulkhead/internal/linearizability"
)

// op builds an operation of client c over [call, ret].
func op(c int, call, ret int64, in lin.Input, out lin.Output) porcupine.Operation {
	return porcupine.Operation{ClientId: c, Input: in, Call: call, Output: out, Return: ret}
}

// TestModelRejectsHistoriesABrokenBulkheadWouldProduce shows that the check
// can fail: each history breaks one promise of the bulkhead.
func TestModelRejectsHistoriesABrokenBulkheadWouldProduce(t *testing.T) {
	cfg := bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Hour, MaxQueuedCalls: 2}
	for name, h := range map[string][]porcupine.Operation{
		"two permits out of one": {
			op(0, 1, 2, lin.Input{Kind: lin.Try}, lin.Output{OK: true}),
			op(1, 3, 4, lin.Input{Kind: lin.Try}, lin.Output{OK: true}),
		},
		"a newcomer barges past a waiter": {
			op(0, 1, 2, lin.Input{Kind: lin.Try}, lin.Output{OK: true}),
			op(1, 3, 4, lin.Input{Kind: lin.Acquire, ID: 1}, lin.Output{Outcome: lin.Queued}),
			op(0, 5, 6, lin.Input{Kind: lin.Release}, lin.Output{}),
			op(2, 7, 8, lin.Input{Kind: lin.Try}, lin.Output{OK: true}),
		},
		"FIFO grants the newest waiter": {
			op(0, 1, 2, lin.Input{Kind: lin.Try}, lin.Output{OK: true}),
			op(1, 3, 4, lin.Input{Kind: lin.Acquire, ID: 1}, lin.Output{Outcome: lin.Queued}),
			op(2, 5, 6, lin.Input{Kind: lin.Acquire, ID: 2}, lin.Output{Outcome: lin.Queued}),
			op(0, 7, 10, lin.Input{Kind: lin.Release}, lin.Output{}),
			op(9, 8, 9, lin.Input{Kind: lin.Grant, ID: 2}, lin.Output{}),
			op(2, 11, 12, lin.Input{Kind: lin.Await, ID: 2}, lin.Output{Outcome: lin.Granted}),
		},
		"a withdrawn waiter still gets the permit": {
			op(0, 1, 2, lin.Input{Kind: lin.Try}, lin.Output{OK: true}),
			op(1, 3, 4, lin.Input{Kind: lin.Acquire, ID: 1}, lin.Output{Outcome: lin.Queued}),
			op(1, 5, 6, lin.Input{Kind: lin.Cancel, ID: 1}, lin.Output{OK: true}),
			op(0, 7, 10, lin.Input{Kind: lin.Release}, lin.Output{}),
			op(9, 8, 9, lin.Input{Kind: lin.Grant, ID: 1}, lin.Output{}),
			op(1, 11, 12, lin.Input{Kind: lin.Read, ID: 1}, lin.Output{Outcome: lin.Granted}),
		},
		"an outcome seen decided turns pending again": {
			op(0, 1, 2, lin.Input{Kind: lin.Try}, lin.Output{OK: true}),
			op(1, 3, 4, lin.Input{Kind: lin.Acquire, ID: 1}, lin.Output{Outcome: lin.Queued}),
			op(0, 5, 8, lin.Input{Kind: lin.Release}, lin.Output{}),
			op(9, 6, 7, lin.Input{Kind: lin.Grant, ID: 1}, lin.Output{}),
			op(1, 9, 10, lin.Input{Kind: lin.Read, ID: 1}, lin.Output{Outcome: lin.Granted}),
			op(1, 11, 12, lin.Input{Kind: lin.Read, ID: 1}, lin.Output{Outcome: lin.Pending}),
		},
		"a grant is still pending after the release that decided it returned": {
			op(0, 1, 2, lin.Input{Kind: lin.Try}, lin.Output{OK: true}),
			op(1, 3, 4, lin.Input{Kind: lin.Acquire, ID: 1}, lin.Output{Outcome: lin.Queued}),
			op(0, 5, 8, lin.Input{Kind: lin.Release}, lin.Output{}),
			op(9, 6, 7, lin.Input{Kind: lin.Grant, ID: 1}, lin.Output{}),
			op(1, 9, 10, lin.Input{Kind: lin.Read, ID: 1}, lin.Output{Outcome: lin.Pending}),
		},
		"a release leaves its permit free while a call waits": {
			op(0, 1, 2, lin.Input{Kind: lin.Try}, lin.Output{OK: true}),
			op(1, 3, 4, lin.Input{Kind: lin.Acquire, ID: 1}, lin.Output{Outcome: lin.Queued}),
			op(0, 5, 6, lin.Input{Kind: lin.Release}, lin.Output{}),
			op(2, 7, 8, lin.Input{Kind: lin.Metrics}, lin.Output{Metrics: bulkhead.Metrics{AvailableConcurrentCalls: 1, MaxAllowedConcurrentCalls: 1, QueuedCalls: 1, MaxQueuedCalls: 2}}),
		},
		"the queue bound is ignored": {
			op(0, 1, 2, lin.Input{Kind: lin.Try}, lin.Output{OK: true}),
			op(1, 3, 4, lin.Input{Kind: lin.Acquire, ID: 1}, lin.Output{Outcome: lin.Queued}),
			op(1, 5, 6, lin.Input{Kind: lin.Acquire, ID: 2}, lin.Output{Outcome: lin.Queued}),
			op(1, 7, 8, lin.Input{Kind: lin.Acquire, ID: 3}, lin.Output{Outcome: lin.Queued}),
		},
		"metrics miss a held permit": {
			op(0, 1, 2, lin.Input{Kind: lin.Try}, lin.Output{OK: true}),
			op(1, 3, 4, lin.Input{Kind: lin.Metrics}, lin.Output{Metrics: bulkhead.Metrics{AvailableConcurrentCalls: 1, MaxAllowedConcurrentCalls: 1, MaxQueuedCalls: 2}}),
		},
	} {
		if porcupine.CheckOperations(lin.Model(cfg), h) {
			t.Errorf("%s: the model accepts the history", name)
		}
	}
	// And it accepts the same operations when they overlap in time so that
	// a legal order exists: the second Try may come after the Release.
	ok := []porcupine.Operation{
		op(0, 1, 2, lin.Input{Kind: lin.Try}, lin.Output{OK: true}),
		op(1, 3, 8, lin.Input{Kind: lin.Try}, lin.Output{OK: true}),
		op(0, 4, 5, lin.Input{Kind: lin.Release}, lin.Output{}),
	}
	if !porcupine.CheckOperations(lin.Model(cfg), ok) {
		t.Error("the model rejects a linearizable history")
	}
}

// TestModelRejectsHistoriesABrokenSweepWouldProduce shows that the check
// of expiry can fail: each history breaks one promise of the sweep.
func TestModelRejectsHistoriesABrokenSweepWouldProduce(t *testing.T) {
	cfg := bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: 20, MaxQueuedCalls: bulkhead.Unbounded}
	// held: the permit is taken and #1 queued at time 0 (deadline 20).
	held := func() []porcupine.Operation {
		return []porcupine.Operation{
			op(0, 1, 2, lin.Input{Kind: lin.Try}, lin.Output{OK: true}),
			op(1, 3, 4, lin.Input{Kind: lin.Acquire, ID: 1}, lin.Output{Outcome: lin.Queued}),
		}
	}
	// twoRuns: #1 (deadline 20), then, after the wait was shortened at
	// time 5, #2 (deadline 10): two runs, both due at 20.
	twoRuns := func() []porcupine.Operation {
		return append(held(),
			op(2, 5, 6, lin.Input{Kind: lin.Tick, At: 5}, lin.Output{}),
			op(1, 7, 8, lin.Input{Kind: lin.Change, N: 1, Wait: 5}, lin.Output{}),
			op(1, 9, 10, lin.Input{Kind: lin.Acquire, ID: 2}, lin.Output{Outcome: lin.Queued}),
			op(2, 11, 12, lin.Input{Kind: lin.Tick, At: 20}, lin.Output{}),
		)
	}
	for name, h := range map[string][]porcupine.Operation{
		"a wait expires before its deadline": append(held(),
			op(2, 5, 6, lin.Input{Kind: lin.Tick, At: 19}, lin.Output{}),
			op(9, 7, 8, lin.Input{Kind: lin.Expire, ID: 1}, lin.Output{}),
		),
		"a sweep ends leaving an expired waiter": append(held(),
			op(2, 5, 6, lin.Input{Kind: lin.Tick, At: 20}, lin.Output{}),
			op(2, 7, 8, lin.Input{Kind: lin.Swept}, lin.Output{}),
		),
		"a sweep expires a later waiter before the oldest expired one": append(twoRuns(),
			op(9, 13, 14, lin.Input{Kind: lin.Expire, ID: 2}, lin.Output{}),
			op(9, 15, 16, lin.Input{Kind: lin.Expire, ID: 1}, lin.Output{}),
		),
		"an expired waiter reads pending after its expiry": append(held(),
			op(2, 5, 6, lin.Input{Kind: lin.Tick, At: 20}, lin.Output{}),
			op(9, 7, 8, lin.Input{Kind: lin.Expire, ID: 1}, lin.Output{}),
			op(1, 9, 10, lin.Input{Kind: lin.Read, ID: 1}, lin.Output{Outcome: lin.Pending}),
		),
		"a wait is timed by a MaxWaitDuration set after it was queued": append(held(),
			op(1, 5, 6, lin.Input{Kind: lin.Change, N: 1, Wait: 5}, lin.Output{}),
			op(2, 7, 8, lin.Input{Kind: lin.Tick, At: 5}, lin.Output{}),
			op(9, 9, 10, lin.Input{Kind: lin.Expire, ID: 1}, lin.Output{}),
		),
		"a waiter expires without a sweep": append(held(),
			op(2, 5, 6, lin.Input{Kind: lin.Tick, At: 20}, lin.Output{}),
			op(1, 7, 8, lin.Input{Kind: lin.Read, ID: 1}, lin.Output{Outcome: lin.Expired}),
		),
		"time goes back": append(held(),
			op(2, 5, 6, lin.Input{Kind: lin.Tick, At: 20}, lin.Output{}),
			op(2, 7, 8, lin.Input{Kind: lin.Tick, At: 10}, lin.Output{}),
		),
	} {
		if porcupine.CheckOperations(lin.Model(cfg), h) {
			t.Errorf("%s: the model accepts the history", name)
		}
	}
	// And it accepts what a sweep may do: grant a waiter past its
	// deadline that no sweep has reached yet, and expire the two runs in
	// queue order, one per batch.
	for name, h := range map[string][]porcupine.Operation{
		"a waiter past its deadline is granted before the sweep": append(held(),
			op(2, 5, 6, lin.Input{Kind: lin.Tick, At: 20}, lin.Output{}),
			op(0, 7, 10, lin.Input{Kind: lin.Release}, lin.Output{}),
			op(9, 8, 9, lin.Input{Kind: lin.Grant, ID: 1}, lin.Output{}),
			op(1, 11, 12, lin.Input{Kind: lin.Read, ID: 1}, lin.Output{Outcome: lin.Granted}),
			op(2, 13, 14, lin.Input{Kind: lin.Swept}, lin.Output{}),
		),
		// One batch, seen half done by a reader that takes no lock.
		"two runs expire in queue order, the first seen before the second": append(twoRuns(),
			op(2, 13, 24, lin.Input{Kind: lin.Swept}, lin.Output{}),
			op(9, 14, 15, lin.Input{Kind: lin.Expire, ID: 1}, lin.Output{}),
			op(1, 16, 17, lin.Input{Kind: lin.Read, ID: 1}, lin.Output{Outcome: lin.Expired}),
			op(1, 18, 19, lin.Input{Kind: lin.Read, ID: 2}, lin.Output{Outcome: lin.Pending}),
			op(9, 20, 21, lin.Input{Kind: lin.Expire, ID: 2}, lin.Output{}),
			op(1, 22, 23, lin.Input{Kind: lin.Read, ID: 2}, lin.Output{Outcome: lin.Expired}),
		),
	} {
		if !porcupine.CheckOperations(lin.Model(cfg), h) {
			t.Errorf("%s: the model rejects the history", name)
		}
	}
}

// weighted builds histories of calls of weight 1 to 3 on a Semaphore of 3
// permits (TestModelRejectsHistoriesABrokenWeightedSemaphoreWouldProduce):
// each method appends one operation, or an operation with the decisions
// its critical section makes inside its interval, at the next instants.
type weighted struct {
	h []porcupine.Operation
	t int64
}

func (w *weighted) add(c int, in lin.Input, out lin.Output, inside ...lin.Input) *weighted {
	w.t++
	call := w.t
	for _, d := range inside {
		w.h = append(w.h, op(9, w.t+1, w.t+2, d, lin.Output{}))
		w.t += 2
	}
	w.t++
	w.h = append(w.h, op(c, call, w.t, in, out))
	return w
}

func (w *weighted) try(c, k int, ok bool) *weighted {
	return w.add(c, lin.Input{Kind: lin.Try, Weight: k}, lin.Output{OK: ok})
}

// acquire is AcquirePermissionAsync of call id of weight k; granted lists
// the grants its enqueue's pass makes.
func (w *weighted) acquire(c, id, k int, out lin.Outcome, granted ...int) *weighted {
	return w.add(c, lin.Input{Kind: lin.Acquire, ID: id, Weight: k}, lin.Output{Outcome: out}, grants(granted)...)
}

// release gives back k permits; granted lists the grants of its pass.
func (w *weighted) release(c, k int, granted ...int) *weighted {
	return w.add(c, lin.Input{Kind: lin.Release, Weight: k}, lin.Output{}, grants(granted)...)
}

func (w *weighted) metrics(avail, limit, inFlight, queued int) *weighted {
	return w.add(2, lin.Input{Kind: lin.Metrics}, lin.Output{Metrics: bulkhead.Metrics{AvailableConcurrentCalls: avail,
		MaxAllowedConcurrentCalls: limit, InFlightCalls: inFlight, QueuedCalls: queued, MaxQueuedCalls: bulkhead.Unbounded}})
}

func grants(ids []int) []lin.Input {
	var in []lin.Input
	for _, id := range ids {
		in = append(in, lin.Input{Kind: lin.Grant, ID: id})
	}
	return in
}

// heavyAtTheFront: 2 of the 3 permits held, #1 (weight 3) queued and passed
// over at once, and three calls of weight 1 granted past it, each given
// back: bypassed is 3, the bound.
func heavyAtTheFront() *weighted {
	w := (&weighted{}).try(0, 2, true).acquire(1, 1, 3, lin.Queued)
	for id := 2; id <= 4; id++ {
		w.acquire(1, id, 1, lin.Queued, id).release(1, 1)
	}
	return w
}

// heldBackAtTheChange: heavyAtTheFront with the 2 permits held as two calls
// of weight 1, one of them given back, and #5 (weight 1) held back by the
// bound with 2 permits free: a ChangeConfig to 2 then makes #1 too heavy.
func heldBackAtTheChange() *weighted {
	w := (&weighted{}).try(0, 1, true).try(0, 1, true).acquire(1, 1, 3, lin.Queued)
	for id := 2; id <= 4; id++ {
		w.acquire(1, id, 1, lin.Queued, id).release(1, 1)
	}
	return w.acquire(1, 5, 1, lin.Queued).release(0, 1)
}

var (
	changeTo2 = lin.Input{Kind: lin.Change, N: 2, Wait: time.Hour}
	reject1   = lin.Input{Kind: lin.Reject, ID: 1}
	grant5    = lin.Input{Kind: lin.Grant, ID: 5}
)

// TestModelRejectsHistoriesABrokenWeightedSemaphoreWouldProduce shows that
// the check of weighted calls can fail: each history breaks one promise of
// docs/design.md, "Weighted calls on a Semaphore" (the bypass bound, grant
// order, no stall, TooHeavy), and the same operations done right pass.
func TestModelRejectsHistoriesABrokenWeightedSemaphoreWouldProduce(t *testing.T) {
	cfg := bulkhead.Config{MaxConcurrentCalls: 3, MaxWaitDuration: time.Hour, MaxQueuedCalls: bulkhead.Unbounded}
	for name, w := range map[string]*weighted{
		"light calls pass a heavy one for more than the limit": heavyAtTheFront().acquire(1, 5, 1, lin.Queued, 5),
		"a heavy waiter is granted before an older one": (&weighted{}).try(0, 3, true).
			acquire(1, 1, 2, lin.Queued).acquire(1, 2, 2, lin.Queued).release(0, 3, 2),
		"a heavy waiter that fits is not granted": (&weighted{}).try(0, 3, true).
			acquire(1, 1, 2, lin.Queued).acquire(1, 2, 2, lin.Queued).release(0, 3).metrics(3, 3, 0, 2),
		"a light call stalls behind a heavy one, permits idle (x/sync)": (&weighted{}).try(0, 2, true).
			acquire(1, 1, 3, lin.Queued).acquire(1, 2, 1, lin.Queued).metrics(1, 3, 2, 2),
		"the allowance renews while a passed-over waiter still waits": heavyAtTheFront().
			acquire(1, 5, 2, lin.Queued). // passed over too (2 > 1 free)
			add(1, lin.Input{Kind: lin.Cancel, ID: 5}, lin.Output{OK: true}).
			acquire(1, 6, 1, lin.Queued, 6),
		"a heavy waiter is not granted when the L+k-th permit comes back": heavyAtTheFront().
			acquire(1, 5, 1, lin.Queued).release(0, 2).metrics(0, 3, 3, 2),
		"a call heavier than the limit is queued":              (&weighted{}).acquire(1, 1, 4, lin.Queued),
		"a call within the limit is rejected as too heavy":     (&weighted{}).try(0, 1, true).acquire(1, 1, 3, lin.TooHeavy),
		"a weighted call is granted with too few permits free": (&weighted{}).try(0, 2, true).try(1, 2, true),
		"a ChangeConfig below a queued waiter's weight leaves it waiting": (&weighted{}).try(0, 3, true).
			acquire(1, 1, 3, lin.Queued).add(2, lin.Input{Kind: lin.Change, N: 2, Wait: time.Hour}, lin.Output{}).
			metrics(0, 2, 3, 1),
		"a ChangeConfig rejects the heavy waiters out of queue order": (&weighted{}).try(0, 3, true).
			acquire(1, 1, 3, lin.Queued).acquire(1, 2, 3, lin.Queued).
			add(2, lin.Input{Kind: lin.Change, N: 2, Wait: time.Hour}, lin.Output{}, lin.Input{Kind: lin.Reject, ID: 2}, lin.Input{Kind: lin.Reject, ID: 1}),
		// Its pass ran before the rejection, under the spent allowance.
		"a ChangeConfig's pass holds back a call the rejection freed": heldBackAtTheChange().
			add(2, changeTo2, lin.Output{}, reject1).metrics(1, 2, 1, 1),
	} {
		if porcupine.CheckOperations(lin.Model(cfg), w.h) {
			t.Errorf("%s: the model accepts the history:\n%s", name, describe(lin.Model(cfg), w.h))
		}
	}
	for name, w := range map[string]*weighted{
		"light calls pass a heavy one for exactly the limit, then wait": heavyAtTheFront().
			acquire(1, 5, 1, lin.Queued).metrics(1, 3, 2, 2),
		// The L+k-th permit back: 3 bypassed, then 2 more (k = 3, 1 was free).
		"the heavy waiter goes when the L+k-th permit comes back, and the allowance renews": heavyAtTheFront().
			acquire(1, 5, 1, lin.Queued).release(0, 2, 1).metrics(0, 3, 3, 1).release(1, 3, 5),
		"grants in queue order as permits come back": (&weighted{}).try(0, 3, true).
			acquire(1, 1, 2, lin.Queued).acquire(1, 2, 2, lin.Queued).release(0, 3, 1).release(1, 2, 2),
		// #5 is held back by the bound (3 bypassed: #3 and #4) until the
		// ChangeConfig rejects #1 and #2, the waiters it was bypassing.
		"a ChangeConfig rejects the heavy waiters from the head, and the allowance renews": (&weighted{}).try(0, 2, true).
			acquire(1, 1, 3, lin.Queued).acquire(1, 2, 3, lin.Queued).acquire(1, 3, 1, lin.Queued, 3).
			release(0, 2).acquire(1, 4, 2, lin.Queued, 4).release(1, 1).acquire(1, 5, 1, lin.Queued).
			add(2, lin.Input{Kind: lin.Change, N: 2, Wait: time.Hour}, lin.Output{},
				lin.Input{Kind: lin.Reject, ID: 1}, lin.Input{Kind: lin.Reject, ID: 2}).
			add(1, lin.Input{Kind: lin.Read, ID: 2}, lin.Output{Outcome: lin.TooHeavy}).
			release(1, 2, 5),
		"a ChangeConfig rejects a heavy waiter, the allowance renews, and its pass grants": heldBackAtTheChange().
			add(2, changeTo2, lin.Output{}, reject1, grant5).metrics(0, 2, 2, 0),
		"a call heavier than the limit is rejected at once": (&weighted{}).acquire(1, 1, 4, lin.TooHeavy).try(1, 4, false).try(1, 3, true),
	} {
		if !porcupine.CheckOperations(lin.Model(cfg), w.h) {
			t.Errorf("%s: the model rejects the history:\n%s", name, describe(lin.Model(cfg), w.h))
		}
	}
}
