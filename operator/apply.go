package operator

import (
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/reactivex/rxgo/v2"

	"github.com/rxbulkhead/bulkhead/completable"
	"github.com/rxbulkhead/bulkhead/flowable"
)

// ErrUnsupportedSource is the errors.Is target of the error Apply returns
// for a source it cannot wrap.
var ErrUnsupportedSource = errors.New("operator: unsupported source")

// kind is a source type Apply recognises.
type kind struct {
	name  string
	is    func(src any) bool
	apply func(op Op, src any) any
}

// kinds are the types Apply recognises. In rxgo v2.5.0 the three rxgo
// interfaces are mutually exclusive: each has a Map method returning its own
// interface (Observable, Single, OptionalSingle), and a Go type has one Map
// method, so no type, rxgo's concrete ones (*ObservableImpl, *SingleImpl,
// *OptionalSingleImpl) included, implements two of them. Likewise
// Completable and Publisher[any] each need a Subscribe method of their own
// signature. A type can still be both an rxgo type and a Subscribe type;
// Apply refuses to guess then.
var kinds = []kind{
	{
		name:  "rxgo.Observable",
		is:    func(src any) bool { _, ok := src.(rxgo.Observable); return ok },
		apply: func(op Op, src any) any { return op.Observable(src.(rxgo.Observable)) },
	},
	{
		name:  "rxgo.Single",
		is:    func(src any) bool { _, ok := src.(rxgo.Single); return ok },
		apply: func(op Op, src any) any { return op.Single(src.(rxgo.Single)) },
	},
	{
		name:  "rxgo.OptionalSingle",
		is:    func(src any) bool { _, ok := src.(rxgo.OptionalSingle); return ok },
		apply: func(op Op, src any) any { return op.Maybe(src.(rxgo.OptionalSingle)) },
	},
	{
		name:  "completable.Completable",
		is:    func(src any) bool { _, ok := src.(completable.Completable); return ok },
		apply: func(op Op, src any) any { return op.Completable(src.(completable.Completable)) },
	},
	{
		name:  "flowable.Publisher[any]",
		is:    func(src any) bool { _, ok := src.(flowable.Publisher[any]); return ok },
		apply: func(op Op, src any) any { return Flowable(op, src.(flowable.Publisher[any])) },
	},
}

// Apply wraps src with the Bulkhead operator of its type, chosen from src's
// dynamic type, and returns the result as the interface type it recognised
// src as (assert it back):
//
//	src implements            the result is            made by
//	rxgo.Observable           rxgo.Observable          Op.Observable
//	rxgo.Single               rxgo.Single              Op.Single
//	rxgo.OptionalSingle       rxgo.OptionalSingle      Op.Maybe
//	completable.Completable   completable.Completable  Op.Completable
//	flowable.Publisher[any]   flowable.Publisher[any]  Flowable
//
// Any other src, including nil, is returned with an error matching
// ErrUnsupportedSource that names src's type and what to do instead. In
// particular a flowable.Publisher[T] whose T is not any is refused: Go
// cannot instantiate flowable.Bulkhead[T] for a T learned at run time, so
// the caller, who knows T, must call Flowable(op, src). A type that
// implements both an rxgo interface and completable.Completable (or
// flowable.Publisher[any]) is refused as ambiguous.
//
// Apply takes no permit: like the typed methods, the result acquires one
// per subscription.
func (op Op) Apply(src any) (any, error) {
	op.bulkhead() // the zero Op panics here too, whatever src is
	if src == nil {
		return nil, fmt.Errorf("%w: nil", ErrUnsupportedSource)
	}
	var found []kind
	for _, k := range kinds {
		if k.is(src) {
			found = append(found, k)
		}
	}
	switch len(found) {
	case 1:
		return found[0].apply(op, src), nil
	case 0:
		if elem, ok := publisherElem(reflect.TypeOf(src)); ok {
			return nil, fmt.Errorf("%w: %T is a flowable.Publisher[%s]; Apply handles only flowable.Publisher[any] "+
				"because Go cannot instantiate generic code at run time: call operator.Flowable(op, src)",
				ErrUnsupportedSource, src, elem)
		}
		return nil, fmt.Errorf("%w: %T is none of rxgo.Observable, rxgo.Single, rxgo.OptionalSingle, "+
			"completable.Completable, flowable.Publisher[any]", ErrUnsupportedSource, src)
	default:
		names := make([]string, len(found))
		for i, k := range found {
			names[i] = k.name
		}
		return nil, fmt.Errorf("%w: %T is ambiguous, it is both %s: call the method of the type you mean",
			ErrUnsupportedSource, src, strings.Join(names, " and "))
	}
}

// flowablePath is the import path of package flowable, as reflect reports it.
var flowablePath = reflect.TypeFor[flowable.Subscription]().PkgPath()

// publisherElem reports whether t looks like a flowable.Publisher[T] (a
// Subscribe method taking a flowable.Subscriber[T]) and returns T's name.
func publisherElem(t reflect.Type) (string, bool) {
	m, ok := t.MethodByName("Subscribe")
	if !ok || m.Type.NumIn() != 2 { // receiver and subscriber
		return "", false
	}
	in := m.Type.In(1)
	name := in.Name()
	if in.PkgPath() != flowablePath || !strings.HasPrefix(name, "Subscriber[") || !strings.HasSuffix(name, "]") {
		return "", false
	}
	return name[len("Subscriber[") : len(name)-1], true
}
