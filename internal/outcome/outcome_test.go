package outcome_test

import (
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/rxbulkhead/bulkhead/internal/outcome"
)

func TestDoneIsClosedByPublishAndSharedAfterwards(t *testing.T) {
	var c outcome.Cell[func()]
	done := c.Done()
	select {
	case <-done:
		t.Fatal("Done closed before the outcome was published")
	default:
	}
	if !c.CompareAndSwap(0, 3) || c.CompareAndSwap(0, 4) {
		t.Fatal("the decision CAS did not decide exactly once")
	}
	c.Lock()
	c.PublishLocked(c.Load())
	c.Unlock()
	<-done
	if s := c.Load(); s&outcome.Mask != 3 || !c.IsPublished() {
		t.Fatalf("state %#x after publishing outcome 3", s)
	}
	var other outcome.Cell[func()]
	other.Lock()
	other.PublishLocked(1)
	other.Unlock()
	if c.Done() != other.Done() {
		t.Fatal("cells published before Done was called do not share the closed channel")
	}
}

func TestRunRecoverCallsEveryCallbackOnceEvenWhenSomePanic(t *testing.T) {
	var got []int
	p := outcome.RunRecover(1, []int{2, 3, 4}, func(i int) {
		got = append(got, i)
		if i%2 == 0 {
			panic(i)
		}
	})
	if !slices.Equal(got, []int{1, 2, 3, 4}) {
		t.Fatalf("ran %v, want every callback once, in order", got)
	}
	if len(p) != 2 || p[0].Value != 2 || p[1].Value != 4 || !strings.Contains(string(p[0].Stack), "TestRunRecoverCallsEveryCallbackOnceEvenWhenSomePanic") {
		t.Fatalf("Run returned %+v, want the panics 2 and 4, in order, with the callback's stack", p)
	}
	if p := outcome.RunRecover(1, nil, func(int) {}); p != nil {
		t.Fatalf("Run without a panic returned %+v", p)
	}
}

func TestDoneRacesWithPublish(t *testing.T) {
	for range 200 {
		var c outcome.Cell[func()]
		var wg sync.WaitGroup
		wg.Go(func() { <-c.Done() })
		wg.Go(func() {
			c.Lock()
			c.PublishLocked(1)
			c.Unlock()
		})
		wg.Wait()
	}
}

func TestRegisterKeepsUntilPublishedAndTakeHandsOverInOrder(t *testing.T) {
	var c outcome.Cell[int]
	if _, _, ok := c.Take(); ok || c.HasCallbacks() {
		t.Fatal("a new cell has callbacks")
	}
	for i := 1; i <= 3; i++ {
		if !c.Register(i) {
			t.Fatalf("Register(%d) refused before the outcome was published", i)
		}
	}
	if !c.CompareAndSwap(0, 2) || !c.Publish() || c.Publish() {
		t.Fatal("Publish did not publish exactly once")
	}
	if c.Load() != 2|outcome.Published {
		t.Fatalf("state %#x, want the decided state 2, published", c.Load())
	}
	if c.Register(4) {
		t.Fatal("Register kept a callback after the outcome was published")
	}
	first, rest, ok := c.Take()
	if !ok || first != 1 || !slices.Equal(rest, []int{2, 3}) {
		t.Fatalf("Take = %v, %v, %v; want 1, [2 3], true", first, rest, ok)
	}
	if _, _, ok := c.Take(); ok {
		t.Fatal("a second Take handed the callbacks over again")
	}
}

func TestResetMakesAFreshCellWithTheGivenChannel(t *testing.T) {
	var c outcome.Cell[int]
	c.Register(1)
	c.Lock()
	c.PublishLocked(1)
	c.Unlock()
	ch := make(chan struct{}, 1)
	c.Reset(ch)
	if c.Load() != 0 || c.HasCallbacks() || c.Chan() != ch {
		t.Fatal("Reset did not make a fresh cell with the given channel")
	}
	c.Store(3 | outcome.Published) // a waiter's owner: no close, a send
	ch <- struct{}{}
	<-c.Chan()
}

func TestRunHandOffRunsTheRestOnAFreshGoroutineAndLetsThePanicGoOn(t *testing.T) {
	var mu sync.Mutex
	var got []int
	var rest sync.WaitGroup
	rest.Add(2)
	record := func(i int) func(int) {
		return func(arg int) {
			mu.Lock()
			got = append(got, i*10+arg)
			mu.Unlock()
			if i > 1 {
				rest.Done()
			}
			if i == 1 {
				panic("boom")
			}
		}
	}
	func() {
		defer func() {
			if v := recover(); v != "boom" {
				t.Errorf("recovered %v, want the callback's panic on its own goroutine", v)
			}
		}()
		outcome.RunHandOff(7, record(0), []func(int){record(1), record(2), record(3)})
	}()
	rest.Wait()
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(got, []int{7, 17, 27, 37}) {
		t.Fatalf("ran %v, want every callback once, in order, with the argument", got)
	}
}
