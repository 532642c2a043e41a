package rxpermit

import (
	"context"
	"reflect"
	"sync"
	"unsafe"

	"github.com/reactivex/rxgo/v2"
)

// chainable returns an rxgo.ObservableImpl over it, so that every rxgo
// operator chained on the result (Map, Take, Retry, Connect, ...) observes
// it with the options the operator propagates, exactly as it observes the
// Iterable of any rxgo Observable. If src is an rxgo.ObservableImpl, the
// result has src's parent context too (rxgo.FromChannel's WithContext),
// which rxgo's operators merge with their own, as they do on src.
//
// rxgo v2 has no exported way to build an ObservableImpl over an Iterable
// of one's own (its iterable field is unexported, and every factory
// supplies its own Iterable). chainable sets that field through its
// offset, checked once against the field's name and type: rxgo v2.5.0,
// the version this module requires and its last release, has it. Should a
// later rxgo lack it, chainable panics with a message saying so, on the
// first call (when a Bulkhead is built), never on a later observation.
func chainable(it rxgo.Iterable, src rxgo.Iterable) rxgo.Observable {
	fs := implFields()
	o := new(rxgo.ObservableImpl)
	*(*rxgo.Iterable)(unsafe.Add(unsafe.Pointer(o), fs.iterable)) = it
	*(*context.Context)(unsafe.Add(unsafe.Pointer(o), fs.parent)) = parentOf(src)
	return o
}

// implFields are the offsets of rxgo.ObservableImpl's fields.
var implFields = sync.OnceValue(func() (fs struct{ iterable, parent uintptr }) {
	fs.iterable = implField("iterable", reflect.TypeFor[rxgo.Iterable]())
	fs.parent = implField("parent", reflect.TypeFor[context.Context]())
	return fs
})

func implField(name string, typ reflect.Type) uintptr {
	f, ok := reflect.TypeFor[rxgo.ObservableImpl]().FieldByName(name)
	if !ok || f.Type != typ || len(f.Index) != 1 {
		panic("rxpermit: this rxgo version's ObservableImpl has no " + name + " field of type " + typ.String() + "; the bulkhead operators need rxgo v2.5.0's")
	}
	return f.Offset
}

// parentOf returns the parent context of an rxgo.ObservableImpl (the one
// rxgo.FromChannel builds from its options), nil for anything else.
func parentOf(o rxgo.Iterable) context.Context {
	impl, ok := o.(*rxgo.ObservableImpl)
	if !ok || impl == nil {
		return nil
	}
	return *(*context.Context)(unsafe.Add(unsafe.Pointer(impl), implFields().parent))
}
