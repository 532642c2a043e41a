package iterate_test

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"

	bulkhead "github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/iterate"
	"github.com/rxbulkhead/bulkhead/testkit"
)

// The loop body or the source calls runtime.Goexit (t.FailNow inside the
// loop), or the source swallows the body's panic (which Go turns into a
// panic of its own at the loop): the permit comes back with the rules of a
// panic, FinishCall once the body had a value, ReleasePermission if not.
func TestAGoexitOrASwallowedPanicGivesThePermitBackLikeAPanic(t *testing.T) {
	for _, tc := range []struct {
		name string
		seq  func(yield func(int) bool)
		body func()
		want []bulkhead.EventType
	}{
		{"Goexit in the body", func(yield func(int) bool) { yield(1) }, runtime.Goexit, []bulkhead.EventType{permitted, finished}},
		{"Goexit in the source before a value", func(func(int) bool) { runtime.Goexit() }, func() {}, []bulkhead.EventType{permitted}},
		{"a source that swallows the body's panic", func(yield func(int) bool) {
			defer func() { recover() }()
			yield(1)
		}, func() { panic("body") }, []bulkhead.EventType{permitted, finished}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, ev := partner(t, 1, 0)
			got := testkit.RunToEnd(func() {
				for range iterate.Seq(t.Context(), b, tc.seq) {
					tc.body()
				}
			})
			assert.NotNil(t, got, "the loop must not complete normally")
			assert.Equal(t, 0, b.Metrics().InFlightCalls)
			assert.Equal(t, tc.want, ev.Types())
		})
	}
}
