package single

import (
	"github.com/reactivex/rxgo/v2"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/internal/nilcheck"
	"github.com/rxbulkhead/bulkhead/internal/rxpermit"
)

// Bulkhead returns a Single that runs src under a permit of b, one permit
// per observation.
//
// Observe never blocks: the permit is requested when the returned Single is
// observed (not when Bulkhead is called) and src is observed only once the
// permit is granted, with a context that is cancelled when the observation
// ends. A rejected observation emits one error item holding the
// *bulkhead.FullError and closes without observing src.
//
// opts are rxgo options applied to every observation (WithBufferedChannel,
// WithContext); options given to Observe, Get or Run come after them, so a
// context given there replaces one given here.
//
// Bulkhead panics if b or src is nil.
func Bulkhead(b bulkhead.Bulkhead, src rxgo.Single, opts ...rxgo.Option) rxgo.Single {
	if nilcheck.Is(b) {
		panic("single: Bulkhead called with a nil bulkhead.Bulkhead")
	}
	if src == nil {
		panic("single: Bulkhead called with a nil source rxgo.Single")
	}
	return rxpermit.Single(b, src, opts...)
}

// Transformer returns Bulkhead(b, src, opts...) as a function of src, so that
// one partner's bulkhead can be kept in a variable and applied to many
// pipelines. It panics if b is nil.
func Transformer(b bulkhead.Bulkhead, opts ...rxgo.Option) func(src rxgo.Single) rxgo.Single {
	if nilcheck.Is(b) {
		panic("single: Transformer called with a nil bulkhead.Bulkhead")
	}
	return func(src rxgo.Single) rxgo.Single { return Bulkhead(b, src, opts...) }
}
