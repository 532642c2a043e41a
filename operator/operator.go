package operator

import (
	"github.com/reactivex/rxgo/v2"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/completable"
	"github.com/rxbulkhead/bulkhead/flowable"
	"github.com/rxbulkhead/bulkhead/internal/nilcheck"
	"github.com/rxbulkhead/bulkhead/maybe"
	"github.com/rxbulkhead/bulkhead/observable"
	"github.com/rxbulkhead/bulkhead/single"
)

// Op applies one bulkhead to sources of the five reactive types. It is a
// small immutable value: copy it, keep it in a variable per partner, share
// it between goroutines. The zero Op has no bulkhead and its methods panic;
// make one with Of.
type Op struct {
	b bulkhead.Bulkhead
}

// Of returns the Op that applies b. It panics if b is nil.
func Of(b bulkhead.Bulkhead) Op {
	if nilcheck.Is(b) {
		panic("operator: Of called with a nil bulkhead.Bulkhead")
	}
	return Op{b: b}
}

// Bulkhead returns the bulkhead op applies.
func (op Op) Bulkhead() bulkhead.Bulkhead { return op.bulkhead() }

// bulkhead returns op.b, panicking with the rule if op is the zero Op.
func (op Op) bulkhead() bulkhead.Bulkhead {
	if op.b == nil {
		panic("operator: the zero Op has no bulkhead; make one with operator.Of")
	}
	return op.b
}

// Observable is observable.Bulkhead(op.Bulkhead(), src, opts...).
func (op Op) Observable(src rxgo.Observable, opts ...rxgo.Option) rxgo.Observable {
	return observable.Bulkhead(op.bulkhead(), src, opts...)
}

// Single is single.Bulkhead(op.Bulkhead(), src, opts...).
func (op Op) Single(src rxgo.Single, opts ...rxgo.Option) rxgo.Single {
	return single.Bulkhead(op.bulkhead(), src, opts...)
}

// Maybe is maybe.Bulkhead(op.Bulkhead(), src, opts...): rxgo calls a Maybe
// an OptionalSingle.
func (op Op) Maybe(src rxgo.OptionalSingle, opts ...rxgo.Option) rxgo.OptionalSingle {
	return maybe.Bulkhead(op.bulkhead(), src, opts...)
}

// Completable is completable.Bulkhead(op.Bulkhead(), src).
func (op Op) Completable(src completable.Completable) completable.Completable {
	return completable.Bulkhead(op.bulkhead(), src)
}

// Flowable is flowable.Bulkhead(op.Bulkhead(), src). It is a function, not a
// method, because Go methods cannot have type parameters.
func Flowable[T any](op Op, src flowable.Publisher[T]) flowable.Publisher[T] {
	return flowable.Bulkhead(op.bulkhead(), src)
}
