package eventloop

import (
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

func TestLoopRunsTasksInPostOrderAndTimersByDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLoop()
		var wg sync.WaitGroup
		wg.Go(l.run)
		var got []string // only touched on the loop
		done := make(chan struct{})
		l.post(func() {
			got = append(got, "task1")
			l.schedule(20*time.Millisecond, func() { got = append(got, "t20") })
			l.schedule(10*time.Millisecond, func() { got = append(got, "t10a") })
			l.schedule(10*time.Millisecond, func() { got = append(got, "t10b") })
			l.schedule(30*time.Millisecond, func() { close(done) })
		})
		l.post(func() { got = append(got, "task2") })
		<-done
		l.stop()
		wg.Wait()
		want := []string{"task1", "task2", "t10a", "t10b", "t20"}
		if !slices.Equal(got, want) {
			t.Errorf("order = %v; want %v", got, want)
		}
	})
}

func TestLoopDropsPostsAfterStop(t *testing.T) {
	l := newLoop()
	var wg sync.WaitGroup
	wg.Go(l.run)
	l.stop()
	wg.Wait()
	ran := false
	l.post(func() { ran = true })
	if ran || len(l.queue) != 0 {
		t.Error("a task posted after stop was kept or run")
	}
}
