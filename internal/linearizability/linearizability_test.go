package linearizability_test

import (
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"go.uber.org/goleak"

	bulkhead "github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/internal/linearizability"
	"github.com/rxbulkhead/bulkhead/testkit"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// historiesPerConfig is how many histories each configuration records and
// checks; LINEARIZABILITY_HISTORIES overrides it (make stress sets more).
func historiesPerConfig(t *testing.T) int {
	if s := os.Getenv("LINEARIZABILITY_HISTORIES"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("LINEARIZABILITY_HISTORIES=%q: want a positive integer", s)
		}
		return n
	}
	return 300
}

const (
	clients       = 4
	opsPerClient  = 12
	checkTimeout  = 10 * time.Second
	neverExpiring = time.Hour // on a VirtualClock nobody advances
)

// TestConcurrentHistoriesAreLinearizable records many short histories of
// clients racing on one Semaphore (TryAcquirePermission,
// AcquirePermissionAsync, Cancel, reading and awaiting outcomes, FinishCall
// and ReleasePermission, ChangeConfig, Metrics, and in the *_callbacks
// configurations OnDone callbacks that re-enter and panic) and checks each
// one with porcupine against linearizability.Model.
func TestConcurrentHistoriesAreLinearizable(t *testing.T) {
	n := historiesPerConfig(t)
	total := 0
	for ci, tc := range []struct {
		name   string
		cfg    bulkhead.Config
		limits []int
		// listener registers an event listener, so that OnComplete publishes
		// CallFinished between its grant and the grant's delivery (see
		// TestFinishedListenerSeesNoFreePermitWhileCallsWait).
		listener bool
		// callbacks makes clients register OnDone callbacks that re-enter
		// (read, release, cancel, ChangeConfig) and, without limits, panic.
		callbacks bool
	}{
		{"FIFO_bounded", bulkhead.Config{MaxConcurrentCalls: 2, MaxWaitDuration: neverExpiring, MaxQueuedCalls: 3}, nil, false, false},
		{"FIFO_unbounded_ChangeConfig", bulkhead.Config{MaxConcurrentCalls: 2, MaxWaitDuration: neverExpiring, MaxQueuedCalls: bulkhead.Unbounded}, []int{1, 2, 3}, false, false},
		{"LIFO_evicting", bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: neverExpiring, MaxQueuedCalls: 2, QueueOrder: bulkhead.LIFO}, nil, false, false},
		{"LIFO_ChangeConfig", bulkhead.Config{MaxConcurrentCalls: 2, MaxWaitDuration: neverExpiring, MaxQueuedCalls: 3, QueueOrder: bulkhead.LIFO}, []int{1, 3}, false, false},
		{"FIFO_no_wait", bulkhead.Config{MaxConcurrentCalls: 2}, []int{1, 2}, false, false},
		{"FIFO_with_event_listener", bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: neverExpiring, MaxQueuedCalls: 3}, nil, true, false},
		{"FIFO_callbacks_panicking", bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: neverExpiring, MaxQueuedCalls: bulkhead.Unbounded}, nil, false, true},
		{"FIFO_callbacks_ChangeConfig", bulkhead.Config{MaxConcurrentCalls: 2, MaxWaitDuration: neverExpiring, MaxQueuedCalls: bulkhead.Unbounded}, []int{1, 2, 3}, false, true},
		{"LIFO_evicting_callbacks_panicking", bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: neverExpiring, MaxQueuedCalls: 2, QueueOrder: bulkhead.LIFO}, nil, true, true},
		{"LIFO_callbacks_ChangeConfig", bulkhead.Config{MaxConcurrentCalls: 2, MaxWaitDuration: neverExpiring, MaxQueuedCalls: 3, QueueOrder: bulkhead.LIFO}, []int{1, 3}, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			model := linearizability.Model(tc.cfg)
			var ok, unknown, ops, overlapping int
			var panics int64
			inCallbacks := 0 // operations run by callbacks
			for h := range n {
				history, p := recordHistory(t, tc.cfg, tc.limits, tc.listener, tc.callbacks, uint64(ci)<<32|uint64(h))
				panics += p
				for _, o := range history {
					if o.ClientId >= 1000 {
						inCallbacks++
					}
				}
				ops += len(history)
				overlapping += countOverlapping(history)
				res, info := porcupine.CheckOperationsVerbose(model, history, checkTimeout)
				switch res {
				case porcupine.Ok:
					ok++
				case porcupine.Unknown:
					unknown++
				default:
					t.Fatalf("history %d is not linearizable (%d operations):\n%s\nlongest linearizable prefixes: %v",
						h, len(history), describe(model, history), info.PartialLinearizations())
				}
			}
			total += ok
			t.Logf("%s: %d histories (%d operations, %d of them in callbacks, %d%% overlapping another client's, %d callback panics) checked: %d linearizable, %d undecided within %v",
				tc.name, n, ops, inCallbacks, 100*overlapping/max(ops, 1), panics, ok, unknown, checkTimeout)
			if unknown > n/100 {
				t.Errorf("%d of %d histories could not be decided within %v", unknown, n, checkTimeout)
			}
		})
	}
	t.Logf("%d histories checked linearizable in all", total)
}

// recordHistory runs clients on a fresh Semaphore and returns their history.
func recordHistory(t *testing.T, cfg bulkhead.Config, limits []int, listener, callbacks bool, seed uint64) ([]porcupine.Operation, int64) {
	t.Helper()
	s, err := bulkhead.New("linearizability", cfg, bulkhead.WithClock(testkit.NewVirtualClock(time.Unix(0, 0))))
	if err != nil {
		t.Fatal(err)
	}
	if listener {
		defer s.OnEvent(func(bulkhead.Event) {})()
	}
	r := linearizability.Recorder{Callbacks: callbacks}
	var wg sync.WaitGroup
	start := make(chan struct{}) // all clients start at once, for overlap
	for c := range clients {
		rng := rand.New(rand.NewPCG(seed, uint64(c)))
		wg.Go(func() {
			<-start
			r.Client(s, c, opsPerClient, rng, limits)
		})
	}
	close(start)
	wg.Wait()
	r.Wait()
	if m := s.Metrics(); m.InFlightCalls != 0 || m.QueuedCalls != 0 {
		t.Fatalf("history %d left %d permits held and %d calls queued", seed, m.InFlightCalls, m.QueuedCalls)
	}
	return r.History(), r.Panics()
}

// countOverlapping counts the operations whose call-return interval
// overlaps an operation of another client: the ones where order matters.
func countOverlapping(h []porcupine.Operation) int {
	n := 0
	for i, a := range h {
		for j, b := range h {
			if i != j && a.ClientId != b.ClientId && a.Call < b.Return && b.Call < a.Return {
				n++
				break
			}
		}
	}
	return n
}

func describe(m porcupine.Model, h []porcupine.Operation) string {
	var b strings.Builder
	for _, op := range h {
		b.WriteString("  client ")
		b.WriteString(strconv.Itoa(op.ClientId))
		b.WriteString(" [")
		b.WriteString(strconv.FormatInt(op.Call, 10))
		b.WriteString(", ")
		b.WriteString(strconv.FormatInt(op.Return, 10))
		b.WriteString("] ")
		b.WriteString(m.DescribeOperation(op.Input, op.Output))
		b.WriteByte('\n')
	}
	return b.String()
}

// TestFinishedListenerSeesNoFreePermitWhileCallsWait is the regression test
// of what the history check found when an event listener was registered:
// OnComplete published CallFinished after it had put the permit back and
// before it handed it to the next waiter, with the lock released in between,
// so a Metrics read at that moment (from the listener here, from any
// goroutine in general) showed a free permit while calls waited, a state
// that no sequential order of the operations produces. OnComplete now hands
// the permit on in the same critical section.
func TestFinishedListenerSeesNoFreePermitWhileCallsWait(t *testing.T) {
	s, err := bulkhead.New("window", bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: neverExpiring, MaxQueuedCalls: bulkhead.Unbounded},
		bulkhead.WithClock(testkit.NewVirtualClock(time.Unix(0, 0))))
	if err != nil {
		t.Fatal(err)
	}
	testkit.CheckPermits(t, s)
	var seen []bulkhead.Metrics
	defer s.OnEvent(func(e bulkhead.Event) {
		if e.Type == bulkhead.CallFinished {
			seen = append(seen, s.Metrics())
		}
	})()
	if !s.TryAcquirePermission() {
		t.Fatal("the permit of a new bulkhead is not free")
	}
	waiter := s.AcquirePermissionAsync()
	s.FinishCall() // hands the permit to waiter
	if !waiter.Granted() {
		t.Fatalf("the waiter was not granted: %v", waiter.Err())
	}
	s.FinishCall()
	for i, m := range seen {
		if m.AvailableConcurrentCalls > 0 && m.QueuedCalls > 0 {
			t.Errorf("CallFinished #%d: Metrics() = %+v: a permit is free while %d call(s) wait", i+1, m, m.QueuedCalls)
		}
	}
}
