package rxpermit_test

import (
	"testing"

	"github.com/reactivex/rxgo/v2"

	bulkhead "github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/internal/rxpermit"
	"github.com/rxbulkhead/bulkhead/internal/rxpermit/rxtest"
)

func TestObservableBehavesAsABulkheadOperator(t *testing.T) {
	rxtest.Suite{Apply: func(b bulkhead.Bulkhead, src rxgo.Observable, opts ...rxgo.Option) rxgo.Iterable {
		return rxpermit.Observable(b, src, opts...)
	}}.Run(t)
}

func TestSingleBehavesAsABulkheadOperator(t *testing.T) {
	rxtest.Suite{First: true, Apply: func(b bulkhead.Bulkhead, src rxgo.Observable, opts ...rxgo.Option) rxgo.Iterable {
		return rxpermit.Single(b, src, opts...)
	}}.Run(t)
}

func TestOptionalSingleBehavesAsABulkheadOperator(t *testing.T) {
	rxtest.Suite{First: true, Apply: func(b bulkhead.Bulkhead, src rxgo.Observable, opts ...rxgo.Option) rxgo.Iterable {
		return rxpermit.OptionalSingle(b, src, opts...)
	}}.Run(t)
}
