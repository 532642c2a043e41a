package rxpermit

import (
	"testing"

	"github.com/reactivex/rxgo/v2"

	bulkhead "github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/internal/rxpermit/rxtest"
)

// The deferred Observable is what every chained rxgo operator (Map, Retry,
// Take, ...) observes: it must follow the same rules as our own Observe.

func TestTheObservableChainedOperatorsObserveBehavesAsABulkheadOperator(t *testing.T) {
	rxtest.Suite{Apply: func(b bulkhead.Bulkhead, src rxgo.Observable, opts ...rxgo.Option) rxgo.Iterable {
		return Observable(b, src, opts...).(*observable).Observable
	}}.Run(t)
}

func TestTheSingleChainedOperatorsObserveBehavesAsABulkheadOperator(t *testing.T) {
	rxtest.Suite{First: true, Apply: func(b bulkhead.Bulkhead, src rxgo.Observable, opts ...rxgo.Option) rxgo.Iterable {
		return Single(b, src, opts...).(*single).obs
	}}.Run(t)
}

func TestTheOptionalSingleChainedOperatorsObserveBehavesAsABulkheadOperator(t *testing.T) {
	rxtest.Suite{First: true, Apply: func(b bulkhead.Bulkhead, src rxgo.Observable, opts ...rxgo.Option) rxgo.Iterable {
		return OptionalSingle(b, src, opts...).(*optional).obs
	}}.Run(t)
}
