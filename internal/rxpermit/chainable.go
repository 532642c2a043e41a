package rxpermit

import (
	"reflect"
	"sync"
	"unsafe"

	"github.com/reactivex/rxgo/v2"
)

// chainable returns an rxgo.ObservableImpl over it, so that every rxgo
// operator chained on the result (Map, Take, Retry, Connect, ...) observes
// it with the options the operator propagates, exactly as it observes the
// Iterable of any rxgo Observable.
//
// rxgo v2 has no exported way to build an ObservableImpl over an Iterable
// of one's own (its iterable field is unexported, and every factory
// supplies its own Iterable). chainable sets that field through its
// offset, checked once against the field's name and type: rxgo v2.5.0,
// the version this module requires and its last release, has it. Should a
// later rxgo lack it, chainable panics with a message saying so, on the
// first call (when a Bulkhead is built), never on a later observation.
func chainable(it rxgo.Iterable) rxgo.Observable {
	off := iterableOffset()
	o := new(rxgo.ObservableImpl)
	*(*rxgo.Iterable)(unsafe.Add(unsafe.Pointer(o), off)) = it
	return o
}

// iterableOffset is the offset of rxgo.ObservableImpl's iterable field.
var iterableOffset = sync.OnceValue(func() uintptr {
	f, ok := reflect.TypeFor[rxgo.ObservableImpl]().FieldByName("iterable")
	if !ok || f.Type != reflect.TypeFor[rxgo.Iterable]() || len(f.Index) != 1 {
		panic("rxpermit: this rxgo version's ObservableImpl has no iterable field of type rxgo.Iterable; the bulkhead operators need rxgo v2.5.0's")
	}
	return f.Offset
})
