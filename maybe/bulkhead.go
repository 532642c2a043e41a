package maybe

import (
	"github.com/reactivex/rxgo/v2"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/internal/nilcheck"
	"github.com/rxbulkhead/bulkhead/internal/rxpermit"
)

// Bulkhead returns an OptionalSingle that runs src under a permit of b, one
// permit per observation.
//
// Observe never blocks: the permit is requested when the returned
// OptionalSingle is observed (not when Bulkhead is called) and src is
// observed only once the permit is granted, with a context that is cancelled
// when the observation ends. A rejected observation emits one error item
// holding the *bulkhead.FullError and closes without observing src.
//
// opts are rxgo options applied to every observation (WithBufferedChannel,
// WithContext); options given to Observe, Get or Run come after them, so a
// context given there replaces one given here.
//
// Bulkhead panics if b or src is nil.
func Bulkhead(b bulkhead.Bulkhead, src rxgo.OptionalSingle, opts ...rxgo.Option) rxgo.OptionalSingle {
	if nilcheck.Is(b) {
		panic("maybe: Bulkhead called with a nil bulkhead.Bulkhead")
	}
	if src == nil {
		panic("maybe: Bulkhead called with a nil source rxgo.OptionalSingle")
	}
	return rxpermit.OptionalSingle(b, src, opts...)
}

// Transformer returns Bulkhead(b, src, opts...) as a function of src, so that
// one partner's bulkhead can be kept in a variable and applied to many
// pipelines. It panics if b is nil.
func Transformer(b bulkhead.Bulkhead, opts ...rxgo.Option) func(src rxgo.OptionalSingle) rxgo.OptionalSingle {
	if nilcheck.Is(b) {
		panic("maybe: Transformer called with a nil bulkhead.Bulkhead")
	}
	return func(src rxgo.OptionalSingle) rxgo.OptionalSingle { return Bulkhead(b, src, opts...) }
}
