// Package nilcheck tells whether an interface value holds nothing usable:
// the nil interface, or a nil pointer, map, func, channel, slice or
// interface in it. Constructors that document "panics if b is nil" use it,
// so that a nil *bulkhead.Semaphore passed as a bulkhead.Bulkhead fails
// where it is passed, not at the first call made through it.
package nilcheck

import "reflect"

// Is reports whether v is nil or holds a nil pointer, map, func, channel,
// slice or interface.
func Is(v any) bool {
	if v == nil {
		return true
	}
	switch rv := reflect.ValueOf(v); rv.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Func, reflect.Chan, reflect.Slice, reflect.Interface:
		return rv.IsNil()
	}
	return false
}
