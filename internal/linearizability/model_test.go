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
			op(0, 7, 8, lin.Input{Kind: lin.Release}, lin.Output{}),
			op(2, 9, 10, lin.Input{Kind: lin.Await, ID: 2}, lin.Output{Outcome: lin.Granted}),
		},
		"a withdrawn waiter still gets the permit": {
			op(0, 1, 2, lin.Input{Kind: lin.Try}, lin.Output{OK: true}),
			op(1, 3, 4, lin.Input{Kind: lin.Acquire, ID: 1}, lin.Output{Outcome: lin.Queued}),
			op(1, 5, 6, lin.Input{Kind: lin.Cancel, ID: 1}, lin.Output{OK: true}),
			op(0, 7, 8, lin.Input{Kind: lin.Release}, lin.Output{}),
			op(1, 9, 10, lin.Input{Kind: lin.Read, ID: 1}, lin.Output{Outcome: lin.Granted}),
		},
		"an outcome seen decided turns pending again": {
			op(0, 1, 2, lin.Input{Kind: lin.Try}, lin.Output{OK: true}),
			op(1, 3, 4, lin.Input{Kind: lin.Acquire, ID: 1}, lin.Output{Outcome: lin.Queued}),
			op(0, 5, 6, lin.Input{Kind: lin.Release}, lin.Output{}),
			op(1, 7, 8, lin.Input{Kind: lin.Read, ID: 1}, lin.Output{Outcome: lin.Granted}),
			op(1, 9, 10, lin.Input{Kind: lin.Read, ID: 1}, lin.Output{Outcome: lin.Pending}),
		},
		"a grant is still pending after the release that decided it returned": {
			op(0, 1, 2, lin.Input{Kind: lin.Try}, lin.Output{OK: true}),
			op(1, 3, 4, lin.Input{Kind: lin.Acquire, ID: 1}, lin.Output{Outcome: lin.Queued}),
			op(0, 5, 6, lin.Input{Kind: lin.Release}, lin.Output{}),
			op(1, 7, 8, lin.Input{Kind: lin.Read, ID: 1}, lin.Output{Outcome: lin.Pending}),
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
