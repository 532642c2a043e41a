package single_test

import (
	"testing"
	"testing/synctest"

	"github.com/reactivex/rxgo/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	bulkhead "github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/internal/rxpermit/rxtest"
	"github.com/rxbulkhead/bulkhead/single"
)

// The behaviour every bulkhead operator over rxgo shares: release rules,
// rejection, queueing, FIFO, withdrawal, options, grant racing cancel.
func TestBehavesAsABulkheadOperator(t *testing.T) {
	rxtest.Suite{First: true, Apply: func(b bulkhead.Bulkhead, src rxgo.Observable, opts ...rxgo.Option) rxgo.Iterable {
		return single.Bulkhead(b, rxtest.ColdSingle(src), opts...)
	}}.Run(t)
}

func TestTransformerAndNilArguments(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, _ := rxtest.Partner(t, 1, 0)
		walmart := single.Transformer(b)
		it, err := walmart(rxgo.JustItem("po")).Get()
		require.NoError(t, err)
		assert.Equal(t, "po", it.V)
		assert.PanicsWithValue(t, "single: Bulkhead called with a nil bulkhead.Bulkhead", func() { single.Bulkhead(nil, rxgo.JustItem(1)) })
		assert.PanicsWithValue(t, "single: Bulkhead called with a nil source rxgo.Single", func() { single.Bulkhead(b, nil) })
		assert.PanicsWithValue(t, "single: Transformer called with a nil bulkhead.Bulkhead", func() { single.Transformer(nil) })
		var none *bulkhead.Semaphore // a nil pointer in the interface is nil too
		assert.PanicsWithValue(t, "single: Bulkhead called with a nil bulkhead.Bulkhead", func() { single.Bulkhead(none, rxgo.JustItem(1)) })
		assert.PanicsWithValue(t, "single: Transformer called with a nil bulkhead.Bulkhead", func() { single.Transformer(none) })
	})
}
