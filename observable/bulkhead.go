package observable

import (
	"github.com/reactivex/rxgo/v2"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/internal/nilcheck"
	"github.com/rxbulkhead/bulkhead/internal/rxpermit"
)

// Bulkhead returns an Observable that runs src under a permit of b, one
// permit per observation.
//
// Observe never blocks: the permit is requested when the returned Observable
// is observed (not when Bulkhead is called) and src is observed only once the
// permit is granted, with a context that is cancelled when the subscription
// ends. A rejected subscription emits one error item holding the
// *bulkhead.FullError and closes without observing src.
//
// opts are rxgo options applied to every observation (WithBufferedChannel,
// WithContext); options given to Observe, or propagated by a downstream
// operator, come after them, so a context given there replaces one given
// here. The consumer's context ending while the permit is pending withdraws
// the request; ending while src runs cancels src and releases the permit.
//
// A consumer must drain the channel or cancel its context: see the package
// documentation. Bulkhead panics if b or src is nil.
func Bulkhead(b bulkhead.Bulkhead, src rxgo.Observable, opts ...rxgo.Option) rxgo.Observable {
	if nilcheck.Is(b) {
		panic("observable: Bulkhead called with a nil bulkhead.Bulkhead")
	}
	if src == nil {
		panic("observable: Bulkhead called with a nil source rxgo.Observable")
	}
	return rxpermit.Observable(b, src, opts...)
}

// Transformer returns Bulkhead(b, src, opts...) as a function of src, so that
// one partner's bulkhead can be kept in a variable and applied to many
// pipelines. It panics if b is nil.
func Transformer(b bulkhead.Bulkhead, opts ...rxgo.Option) func(src rxgo.Observable) rxgo.Observable {
	if nilcheck.Is(b) {
		panic("observable: Transformer called with a nil bulkhead.Bulkhead")
	}
	return func(src rxgo.Observable) rxgo.Observable { return Bulkhead(b, src, opts...) }
}
