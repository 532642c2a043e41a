package maybe_test

import (
	"testing"
	"testing/synctest"

	"github.com/reactivex/rxgo/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	bulkhead "github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/internal/rxpermit/rxtest"
	"github.com/rxbulkhead/bulkhead/maybe"
)

// The behaviour every bulkhead operator over rxgo shares: release rules,
// rejection, queueing, FIFO, withdrawal, options, grant racing cancel.
func TestBehavesAsABulkheadOperator(t *testing.T) {
	rxtest.Suite{First: true, Apply: func(b bulkhead.Bulkhead, src rxgo.Observable, opts ...rxgo.Option) rxgo.Iterable {
		return maybe.Bulkhead(b, rxtest.ColdOptionalSingle(src), opts...)
	}}.Run(t)
}

func TestTransformerAndNilArguments(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, _ := rxtest.Partner(t, 1, 0)
		walmart := maybe.Transformer(b)
		it, err := walmart(rxgo.Just("po")().First()).Get()
		require.NoError(t, err)
		assert.Equal(t, "po", it.V)
		assert.PanicsWithValue(t, "maybe: Bulkhead called with a nil bulkhead.Bulkhead", func() { maybe.Bulkhead(nil, rxgo.Just(1)().First()) })
		assert.PanicsWithValue(t, "maybe: Bulkhead called with a nil source rxgo.OptionalSingle", func() { maybe.Bulkhead(b, nil) })
		assert.PanicsWithValue(t, "maybe: Transformer called with a nil bulkhead.Bulkhead", func() { maybe.Transformer(nil) })
		var none *bulkhead.Semaphore // a nil pointer in the interface is nil too
		assert.PanicsWithValue(t, "maybe: Bulkhead called with a nil bulkhead.Bulkhead", func() { maybe.Bulkhead(none, rxgo.Just(1)().First()) })
		assert.PanicsWithValue(t, "maybe: Transformer called with a nil bulkhead.Bulkhead", func() { maybe.Transformer(none) })
	})
}
