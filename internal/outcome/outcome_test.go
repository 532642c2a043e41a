package outcome_test

import (
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/rxbulkhead/bulkhead/internal/outcome"
)

func TestDoneIsClosedByPublishAndSharedAfterwards(t *testing.T) {
	var c outcome.Cell
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
	var other outcome.Cell
	other.Lock()
	other.PublishLocked(1)
	other.Unlock()
	if c.Done() != other.Done() {
		t.Fatal("cells published before Done was called do not share the closed channel")
	}
}

func TestRunCallsEveryCallbackOnceEvenWhenSomePanic(t *testing.T) {
	var got []int
	p := outcome.Run([]int{1, 2, 3, 4}, func(i int) {
		got = append(got, i)
		if i%2 == 0 {
			panic(i)
		}
	})
	if !slices.Equal(got, []int{1, 2, 3, 4}) {
		t.Fatalf("ran %v, want every callback once, in order", got)
	}
	if len(p) != 2 || p[0].Value != 2 || p[1].Value != 4 || !strings.Contains(string(p[0].Stack), "TestRunCallsEveryCallbackOnceEvenWhenSomePanic") {
		t.Fatalf("Run returned %+v, want the panics 2 and 4, in order, with the callback's stack", p)
	}
	if p := outcome.Run([]int{1}, func(int) {}); p != nil {
		t.Fatalf("Run without a panic returned %+v", p)
	}
}

func TestDoneRacesWithPublish(t *testing.T) {
	for range 200 {
		var c outcome.Cell
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
