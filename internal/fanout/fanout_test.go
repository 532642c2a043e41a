package fanout_test

import (
	"runtime"
	"slices"
	"sync"
	"testing"

	"github.com/rxbulkhead/bulkhead/internal/fanout"
	"github.com/rxbulkhead/bulkhead/internal/publish"
)

// item is a bulkhead with listeners of its own.
type item struct {
	name string
	pub  publish.Listeners[string]
}

func (it *item) OnEvent(f func(string)) func() { return it.pub.Add(f) }

// registry is the smallest registry over a Set: items under a lock.
type registry struct {
	mu    sync.Mutex
	items []*item
	fan   *fanout.Set[*item, string]
}

func newRegistry() *registry {
	r := &registry{}
	r.fan = fanout.New(&r.mu, func() []*item { return r.items })
	return r
}

func (r *registry) add(name string) *item {
	it := &item{name: name}
	r.mu.Lock()
	r.items = append(r.items, it)
	r.fan.AddedLocked(it)
	r.mu.Unlock()
	return it
}

func (r *registry) evict(it *item) {
	r.mu.Lock()
	defer r.mu.Unlock() // a listener's Goexit unwinds through here
	r.items = slices.DeleteFunc(r.items, func(x *item) bool { return x == it })
	r.fan.EvictedLocked(it.name, it)
}

func TestAListenerReachesPresentAndFutureItemsUntilRemoved(t *testing.T) {
	r := newRegistry()
	a := r.add("a")
	var got []string
	remove := r.fan.OnEvent(func(e string) { got = append(got, e) })
	b := r.add("b")
	a.pub.Publish("a1")
	b.pub.Publish("b1")
	r.evict(b)
	b.pub.Publish("b2") // unsubscribed by the eviction
	remove()
	remove()
	a.pub.Publish("a2")
	if want := []string{"a1", "b1"}; !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if a.pub.Active() || b.pub.Active() {
		t.Fatal("a subscription left after remove")
	}
}

// A panicking OnEvict listener is skipped; one that calls runtime.Goexit
// ends the evicting goroutine, but the listeners after it are told first
// (an exporter's, which forgets the name's series, came after the user's).
func TestEveryEvictListenerIsToldEvenAfterOneCallsGoexitOrPanics(t *testing.T) {
	r := newRegistry()
	var mu sync.Mutex
	var told []string
	tell := func(who string) func(string) {
		return func(name string) { mu.Lock(); told = append(told, who+":"+name); mu.Unlock() }
	}
	r.fan.OnEvict(tell("first"))
	r.fan.OnEvict(func(string) { panic("listener") })
	r.fan.OnEvict(func(string) { runtime.Goexit() })
	r.fan.OnEvict(tell("after-goexit"))
	removeLast := r.fan.OnEvict(tell("last"))
	it := r.add("k")
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.evict(it)
	}()
	<-done
	if want := []string{"first:k", "after-goexit:k", "last:k"}; !slices.Equal(told, want) {
		t.Fatalf("told %v, want %v", told, want)
	}
	// The lock was released by the goroutine that ended: the next eviction
	// goes through.
	removeLast()
	told = nil
	again := make(chan struct{})
	go func() {
		defer close(again)
		r.evict(r.add("j"))
	}()
	<-again
	if want := []string{"first:j", "after-goexit:j"}; !slices.Equal(told, want) {
		t.Fatalf("told %v, want %v", told, want)
	}
}
