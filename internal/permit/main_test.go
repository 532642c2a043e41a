package permit

import (
	"sync"
	"sync/atomic"
	"testing"

	bulkhead "github.com/rxbulkhead/bulkhead"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// newSemaphore returns a Semaphore and checks, when the test ends, that every
// permit came back and nobody is queued. (testkit.CheckPermits is not used:
// testkit may depend on packages that depend on this one.)
func newSemaphore(t testing.TB, cfg bulkhead.Config) *bulkhead.Semaphore {
	t.Helper()
	s, err := bulkhead.New("test", cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if m := s.Metrics(); m.InFlightCalls != 0 || m.QueuedCalls != 0 {
			t.Errorf("permit leak: %d in flight, %d queued", m.InFlightCalls, m.QueuedCalls)
		}
	})
	return s
}

// recordEvents collects the event types of s.
func recordEvents(s *bulkhead.Semaphore) func() []bulkhead.EventType {
	var mu sync.Mutex
	var got []bulkhead.EventType
	s.OnEvent(func(e bulkhead.Event) {
		mu.Lock()
		got = append(got, e.Type)
		mu.Unlock()
	})
	return func() []bulkhead.EventType {
		mu.Lock()
		defer mu.Unlock()
		return append([]bulkhead.EventType(nil), got...)
	}
}

func count(evs []bulkhead.EventType, t bulkhead.EventType) int {
	n := 0
	for _, e := range evs {
		if e == t {
			n++
		}
	}
	return n
}

// handler records the outcome of an acquisition.
type handler struct {
	granted  atomic.Int32
	rejected atomic.Int32
	guard    atomic.Pointer[Guard]
	err      atomic.Pointer[error]
	done     chan struct{} // closed by the first outcome
	once     sync.Once
	onGrant  func(g *Guard) // optional
}

func newHandler() *handler { return &handler{done: make(chan struct{})} }

func (h *handler) Granted(g *Guard) {
	h.granted.Add(1)
	h.guard.Store(g)
	if h.onGrant != nil {
		h.onGrant(g)
	}
	h.once.Do(func() { close(h.done) })
}

func (h *handler) Rejected(err error) {
	h.rejected.Add(1)
	h.err.Store(&err)
	h.once.Do(func() { close(h.done) })
}

func (h *handler) error() error {
	if p := h.err.Load(); p != nil {
		return *p
	}
	return nil
}

// upstream records the calls a Subscription or Disposable makes to the
// source, and detects calls that overlap (rule 2.7).
type upstream struct {
	requests  atomic.Int64 // sum of positive requests
	calls     atomic.Int32 // Request calls
	bad       atomic.Int64 // last n <= 0 received (0: none)
	cancels   atomic.Int32
	inCall    atomic.Int32
	overlaps  atomic.Int32
	onRequest func(n int64)
}

func (u *upstream) enter() {
	if u.inCall.Add(1) != 1 {
		u.overlaps.Add(1)
	}
}

func (u *upstream) Request(n int64) {
	u.enter()
	defer u.inCall.Add(-1)
	u.calls.Add(1)
	if n <= 0 {
		u.bad.Store(n)
	} else {
		u.requests.Add(n)
	}
	if u.onRequest != nil {
		u.onRequest(n)
	}
}

// Cancel may run while a Request is in progress, on another goroutine or
// re-entrantly from inside it (rule 3.5: Cancel is thread-safe), so it does
// not count as an overlap; Requests must never overlap each other.
func (u *upstream) Cancel() {
	u.cancels.Add(1)
}
