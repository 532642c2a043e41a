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
