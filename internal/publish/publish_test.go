package publish_test

import (
	"slices"
	"sync"
	"testing"

	"github.com/rxbulkhead/bulkhead/internal/publish"
)

func TestPublishReachesListenersInOrderUntilRemoved(t *testing.T) {
	var l publish.Listeners[int]
	if l.Active() {
		t.Fatal("the zero Listeners is active")
	}
	var got []string
	removeA := l.Add(func(e int) { got = append(got, "a", string(rune('0'+e))) })
	removeB := l.Add(func(e int) { got = append(got, "b", string(rune('0'+e))) })
	l.Publish(1)
	removeA()
	removeA() // idempotent: must not remove b
	l.Publish(2)
	removeB()
	l.Publish(3)
	if want := []string{"a", "1", "b", "1", "b", "2"}; !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if l.Active() {
		t.Fatal("Active after every listener was removed")
	}
}

func TestPanickingListenerDoesNotStarveTheOthers(t *testing.T) {
	var l publish.Listeners[string]
	l.Add(func(string) { panic("listener") })
	var got string
	l.Add(func(e string) { got = e })
	l.Publish("event")
	if got != "event" {
		t.Fatalf("the listener after a panicking one got %q", got)
	}
}

func TestAddRemoveAndPublishConcurrently(t *testing.T) {
	var l publish.Listeners[int]
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 1000 {
				remove := l.Add(func(int) {})
				l.Publish(1)
				remove()
			}
		})
	}
	wg.Wait()
	if l.Active() {
		t.Fatal("listeners left after every one was removed")
	}
}
