package bulkheadhttp_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/testkit"
)

// A request Go queued reports, in its CallFinished, the time from its grant
// to the end of its body, not its wait in the queue.
func TestGoQueuedRequestReportsItsCallDurationFromItsGrant(t *testing.T) {
	clock := testkit.NewVirtualClock(time.Unix(0, 0))
	reg := newRegistry(t, bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: bulkhead.NoTimeout, MaxQueuedCalls: 4},
		bulkhead.WithSemaphoreOptions(bulkhead.WithClock(clock)))
	ev := events(t, reg)
	arrived := make(chan string, 2)
	answer := map[string]chan struct{}{"/first": make(chan struct{}), "/second": make(chan struct{})}
	srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- r.URL.Path
		<-answer[r.URL.Path]
		w.Write([]byte("ok"))
	}))
	tr, c := newAsync(t, reg)

	first := goSend(tr, c, get(t, context.Background(), srv.URL+"/first"))
	<-arrived
	second := goSend(tr, c, get(t, context.Background(), srv.URL+"/second"))
	bh, _ := reg.Find(hostOf(t, srv.URL))
	awaitQueued(t, bh, 1)
	clock.Advance(time.Second) // the first call runs, the second waits
	close(answer["/first"])
	if r := await(t, first); r.err != nil {
		t.Fatal(r.err)
	}
	<-arrived
	clock.Advance(5 * time.Millisecond) // the second call runs
	close(answer["/second"])
	if r := await(t, second); r.err != nil {
		t.Fatal(r.err)
	}
	if d := awaitEvent(t, ev, bulkhead.CallFinished).CallDuration; d != time.Second {
		t.Errorf("first call: CallDuration %v, want 1s", d)
	}
	if d := awaitEvent(t, ev, bulkhead.CallFinished).CallDuration; d != 5*time.Millisecond {
		t.Errorf("second call: CallDuration %v, want 5ms (its wait not counted)", d)
	}
}
