package bulkhead_test

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/testkit"
)

// FuzzSemaphore decodes its input into a sequence of operations (see
// fuzzOp) on a Semaphore driven by a testkit.VirtualClock, plays each one
// on the Semaphore and on refModel, a plain sequential model of the
// bulkhead, and requires, after every operation, the same outcome of the
// operation, the same outcome (Err) of every acquisition made so far, the
// same Metrics and Config, and the same events (type, reason and time) in
// the same order.
//
// Calls are weighted (Semaphore.Call): the weight of a TryAcquirePermission,
// an AcquirePermissionAsync, a ReleasePermission or a FinishCall is 1 +
// arg>>6 (1 to 4; an arg below 64, as in the older seeds, is a call of
// weight 1), so the model also checks bounded bypass (docs/design.md,
// "Weighted calls on a Semaphore") and the rejection of too heavy calls.
func FuzzSemaphore(f *testing.F) {
	// More seeds live in testdata/fuzz/FuzzSemaphore.
	f.Add([]byte{0x21, 0x13, 0x00, 0x01, 0x01, 0x01, 0x03, 0x04, 0x05, 0x02, 0x02, 0x00})
	f.Add([]byte{0x30, 0x11, 0x01, 0x01, 0x01, 0x07, 0x07, 0x05, 0x0f, 0x04, 0x04})
	// Limit 4 held by four calls; a heavy call of 4 waits, then lighter
	// ones that pass it (weights 1, 2) and a too heavy one; releases of 1.
	f.Add([]byte{0x03, 0x01, 0x00, 0x01, 0x00, 0x01, 0x00, 0x01, 0x00, 0x01, 0xc0, 0x01, 0x00, 0x07, 0x40, 0x01, 0x00,
		0x04, 0x00, 0x04, 0x00, 0x04, 0x00, 0x04, 0x00, 0x04, 0x00, 0x06, 0x01, 0x04, 0x40})
	f.Fuzz(func(t *testing.T, data []byte) {
		runSemaphoreModel(t, data)
	})
}

// Operations of FuzzSemaphore; the opcode is one byte modulo fuzzOps, its
// argument the next byte.
const (
	opTry          = iota // TryAcquirePermission
	opAsync               // AcquirePermissionAsync
	opCancel              // Cancel the acquisition arg % count
	opRelease             // ReleasePermission (may over-release: must panic)
	opComplete            // FinishCall (may over-release: must panic)
	opAdvance             // Advance the clock by (arg % 16) * 5ms
	opChange              // ChangeConfig(config from arg), possibly invalid
	opAsyncRelease        // AcquirePermissionAsync whose OnDone calls FinishCall when granted
	opAdvanceExact        // Advance the clock to the earliest deadline exactly
	fuzzOps
)

// fuzzMaxOps bounds the operations decoded from one input.
const fuzzMaxOps = 256

// modelWaiter is a queued acquisition of the model.
type modelWaiter struct {
	id       int
	deadline time.Time
}

// fuzzWeight is the weight an operation's argument encodes.
func fuzzWeight(arg byte) int { return 1 + int(arg>>6) }

// modelEvent is what the model predicts a listener sees.
type modelEvent struct {
	Type   bulkhead.EventType
	Reason bulkhead.Reason
	Time   time.Time
}

func (e modelEvent) String() string {
	return fmt.Sprintf("%s(%s)@%s", e.Type, e.Reason, e.Time.Format("15:04:05.000"))
}

// Outcomes of the model's acquisitions.
const (
	modelPending = iota
	modelGranted
	modelRejected
	modelCancelled
)

type modelAcq struct {
	state         int
	reason        bulkhead.Reason
	releaseOnDone bool // OnDone calls FinishCall when granted
	k             int  // weight
	tooHeavy      int  // rejected as too heavy: the limit then (else 0)
	passed        bool // passed over while queued (bounded bypass)
}

// refModel is the sequential reference model of a Semaphore: what issue 2
// says, written as directly as possible.
type refModel struct {
	cfg       bulkhead.Config
	available int
	queue     []modelWaiter
	acqs      []modelAcq
	now       time.Time
	events    []modelEvent
	// batch holds the acquisitions decided by the call being modelled, in
	// decision order (the Semaphore's decidedList), until deliver.
	batch []int
	// unordered is set when a batch grants two or more acquisitions whose
	// callbacks release: the Semaphore runs the first one's callbacks
	// inline and the others' on fresh goroutines, so the events their
	// releases publish interleave in no fixed order. It is set too when a
	// Cancel or an enqueue grants (their grants are delivered on a fresh
	// goroutine).
	unordered bool
	// Bounded bypass: the queued waiters passed over, and the permits
	// granted past them since there were none.
	passedOver, bypassed int
}

func (m *refModel) event(t bulkhead.EventType, r bulkhead.Reason) {
	m.events = append(m.events, modelEvent{t, r, m.now})
}

// fastPath takes k permits if k are free and nobody waits.
func (m *refModel) fastPath(k int) bool {
	if m.available >= k && len(m.queue) == 0 {
		m.available -= k
		m.event(bulkhead.CallPermitted, 0)
		return true
	}
	return false
}

func (m *refModel) try(k int) bool {
	if m.fastPath(k) {
		return true
	}
	if k > m.cfg.MaxConcurrentCalls {
		m.event(bulkhead.CallRejected, 0)
		return false
	}
	m.event(bulkhead.CallRejected, bulkhead.NoWait)
	return false
}

// async returns the id of a new acquisition of weight k.
func (m *refModel) async(releaseOnDone bool, k int) int {
	id := len(m.acqs)
	m.acqs = append(m.acqs, modelAcq{releaseOnDone: releaseOnDone, k: k})
	if m.fastPath(k) {
		m.acqs[id].state = modelGranted
		if releaseOnDone {
			m.release(true, k)
		}
		return id
	}
	reject := func(r bulkhead.Reason) int {
		m.acqs[id].state, m.acqs[id].reason = modelRejected, r
		m.event(bulkhead.CallRejected, r)
		return id
	}
	if k > m.cfg.MaxConcurrentCalls {
		m.acqs[id].tooHeavy = m.cfg.MaxConcurrentCalls
		return reject(0)
	}
	if m.cfg.MaxWaitDuration == 0 {
		return reject(bulkhead.NoWait)
	}
	if q := m.cfg.MaxQueuedCalls; q > 0 && len(m.queue) >= q {
		if m.cfg.QueueOrder == bulkhead.FIFO {
			return reject(bulkhead.QueueFull)
		}
		for len(m.queue) >= q { // LIFO: evict the oldest
			m.decide(m.queue[0].id, modelRejected, bulkhead.Evicted)
			m.unqueue(0)
		}
	}
	m.queue = append(m.queue, modelWaiter{id: id, deadline: addDeadline(m.now, m.cfg.MaxWaitDuration)})
	// A permit may be free behind a heavy waiter: the newcomer's pass. Its
	// grants are delivered on a fresh goroutine, then the evictions here.
	evicted := m.batch
	m.batch = nil
	if m.available > 0 {
		m.pass()
		if len(m.batch) > 0 {
			m.unordered = true
			m.deliver()
		}
	}
	m.batch = evicted
	m.deliver()
	return id
}

// unqueue takes the waiter at i out of the queue, as any decision does.
func (m *refModel) unqueue(i int) {
	a := &m.acqs[m.queue[i].id]
	if a.passed {
		a.passed = false
		if m.passedOver--; m.passedOver == 0 {
			m.bypassed = 0
		}
	}
	m.queue = slices.Delete(m.queue, i, i+1)
}

// addDeadline is now+d, saturating far in the future.
func addDeadline(now time.Time, d time.Duration) time.Time {
	if d > time.Duration(math.MaxInt64)/2 {
		return now.Add(time.Duration(math.MaxInt64) / 2)
	}
	return now.Add(d)
}

// decide records an outcome decided by the call being modelled.
func (m *refModel) decide(id, state int, r bulkhead.Reason) {
	m.acqs[id].state, m.acqs[id].reason = state, r
	m.batch = append(m.batch, id)
}

// deliver delivers the outcomes the call decided, as the Semaphore does
// (delivery.go): the events of the whole batch first, in decision order,
// then the callbacks, in the same order. A callback's release decides a
// batch of its own, delivered there and then (depth first), before the next
// callback of this batch runs.
func (m *refModel) deliver() {
	batch := m.batch
	m.batch = nil
	releasing := 0
	for _, id := range batch {
		a := m.acqs[id]
		if a.state == modelGranted {
			m.event(bulkhead.CallPermitted, 0)
			if a.releaseOnDone {
				releasing++
			}
		} else {
			m.event(bulkhead.CallRejected, a.reason)
		}
	}
	if releasing > 1 {
		m.unordered = true
	}
	for _, id := range batch {
		if a := m.acqs[id]; a.state == modelGranted && a.releaseOnDone {
			m.release(true, a.k)
		}
	}
}

// pass grants the waiters that fit in queue order (FIFO from the oldest,
// LIFO from the newest), with bounded bypass: a waiter that does not fit
// is passed over, and the ones after it go only while the permits granted
// past passed-over waiters stay within MaxConcurrentCalls; at most 64
// waiters are looked at without a grant.
func (m *refModel) pass() {
	lifo := m.cfg.QueueOrder == bulkhead.LIFO
	blocked, skipped := false, 0
	for n := 0; n < len(m.queue) && m.available > 0 && skipped < 64; {
		i := n // the n-th in grant order, counting only the ones kept
		if lifo {
			i = len(m.queue) - 1 - n
		}
		a := &m.acqs[m.queue[i].id]
		switch {
		case a.k > m.available:
			if !a.passed {
				a.passed = true
				m.passedOver++
			}
			blocked = true
			skipped++
			n++
		case blocked && m.bypassed+a.k > m.cfg.MaxConcurrentCalls:
			if a.k > 1 && !a.passed { // passed over too (with k = 1 nobody behind can go)
				a.passed = true
				m.passedOver++
			}
			skipped++
			n++
		default:
			if blocked {
				m.bypassed += a.k
			}
			id := m.queue[i].id
			m.unqueue(i)
			m.available -= a.k
			m.decide(id, modelGranted, 0)
		}
	}
}

// release returns false if it must panic (more releases than grants).
func (m *refModel) release(finished bool, k int) bool {
	if m.cfg.MaxConcurrentCalls-m.available < k {
		return false
	}
	m.available += k
	if finished {
		m.event(bulkhead.CallFinished, 0)
	}
	m.pass()
	m.deliver()
	return true
}

func (m *refModel) cancel(id int) bool {
	if m.acqs[id].state != modelPending {
		return false
	}
	i := slices.IndexFunc(m.queue, func(w modelWaiter) bool { return w.id == id })
	m.unqueue(i)
	m.acqs[id].state = modelCancelled
	// A heavy waiter withdrawn may let others go: their grants are
	// delivered on a fresh goroutine, the CallCancelled here.
	if m.available > 0 {
		m.pass()
		if len(m.batch) > 0 {
			m.unordered = true
			m.deliver()
		}
	}
	m.event(bulkhead.CallCancelled, 0)
	return true
}

func (m *refModel) change(cfg bulkhead.Config) bool {
	if cfg.Validate() != nil {
		return false
	}
	m.available += cfg.MaxConcurrentCalls - m.cfg.MaxConcurrentCalls
	m.cfg = cfg
	for i := 0; i < len(m.queue); { // waiters the new limit can never grant
		if id := m.queue[i].id; m.acqs[id].k > cfg.MaxConcurrentCalls {
			m.acqs[id].tooHeavy = cfg.MaxConcurrentCalls
			m.decide(id, modelRejected, 0)
			m.unqueue(i)
			continue
		}
		i++
	}
	m.pass()
	m.deliver()
	return true
}

// advance moves time to target, expiring waiters in deadline order; those
// due at the same instant expire in queue order.
func (m *refModel) advance(target time.Time) {
	for {
		var next time.Time
		for i, w := range m.queue {
			if i == 0 || w.deadline.Before(next) {
				next = w.deadline
			}
		}
		if len(m.queue) == 0 || next.After(target) {
			break
		}
		if next.After(m.now) {
			m.now = next
		}
		for i := 0; i < len(m.queue); {
			if w := m.queue[i]; !w.deadline.After(m.now) {
				m.decide(w.id, modelRejected, bulkhead.WaitTimeout)
				m.unqueue(i)
				continue
			}
			i++
		}
		if m.available > 0 { // an expired heavy waiter may have held others back
			m.pass()
		}
		m.deliver()
	}
	if target.After(m.now) {
		m.now = target
	}
}

func (m *refModel) metrics() bulkhead.Metrics {
	return bulkhead.Metrics{
		AvailableConcurrentCalls:  max(m.available, 0),
		MaxAllowedConcurrentCalls: m.cfg.MaxConcurrentCalls,
		InFlightCalls:             m.cfg.MaxConcurrentCalls - m.available,
		QueuedCalls:               len(m.queue),
		MaxQueuedCalls:            m.cfg.MaxQueuedCalls,
	}
}

func (m *refModel) errOf(id int) error {
	switch a := m.acqs[id]; a.state {
	case modelGranted:
		return nil
	case modelRejected:
		if a.tooHeavy > 0 {
			return &bulkhead.TooHeavyError{Name: "fuzz", Weight: a.k, Limit: a.tooHeavy}
		}
		return &bulkhead.FullError{Name: "fuzz", Reason: a.reason}
	case modelCancelled:
		return bulkhead.ErrCancelled
	}
	return bulkhead.ErrPending
}

// fuzzConfig decodes a config; about one in eight is invalid.
func fuzzConfig(b byte) bulkhead.Config {
	cfg := bulkhead.Config{
		MaxConcurrentCalls: 1 + int(b&3),
		MaxWaitDuration:    time.Duration(b>>2&7) * 10 * time.Millisecond,
		MaxQueuedCalls:     [4]int{bulkhead.Unbounded, 1, 2, 3}[b>>5&3],
		QueueOrder:         bulkhead.QueueOrder(b >> 7),
	}
	if b&0x1c == 0x1c { // one wait value in eight is an invalid field instead
		switch b >> 5 & 3 {
		case 0:
			cfg.MaxConcurrentCalls = 0
		case 1:
			cfg.MaxWaitDuration = -time.Millisecond
		case 2:
			cfg.MaxQueuedCalls = -1
		default:
			cfg.QueueOrder = 2
		}
	}
	return cfg
}

// runSemaphoreModel plays data on a Semaphore and on the model.
func runSemaphoreModel(t *testing.T, data []byte) {
	if len(data) < 1 {
		return
	}
	cfg := fuzzConfig(data[0])
	if cfg.Validate() != nil {
		cfg = bulkhead.Config{MaxConcurrentCalls: cfg.MaxConcurrentCalls%4 + 1, MaxWaitDuration: 10 * time.Millisecond, MaxQueuedCalls: bulkhead.Unbounded}
	}
	data = data[1:]
	clock := testkit.NewVirtualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	sem, err := bulkhead.New("fuzz", cfg, bulkhead.WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	// Listeners run on whichever goroutine decides (callbacks a batch hands
	// to fresh goroutines release, and publish, there).
	var gotMu sync.Mutex
	var got []modelEvent
	published := make(chan struct{}, 1) // a token after every event (awaitEvents)
	sem.OnEvent(func(e bulkhead.Event) {
		if e.Name != "fuzz" {
			panic(fmt.Sprintf("event %v names %q", e, e.Name))
		}
		gotMu.Lock()
		got = append(got, modelEvent{e.Type, e.Reason, e.Time})
		gotMu.Unlock()
		select {
		case published <- struct{}{}:
		default: // a token is already there: the waiter will re-count
		}
	})
	events := func() []modelEvent {
		gotMu.Lock()
		defer gotMu.Unlock()
		return slices.Clone(got)
	}
	// ran[k] is closed once acquisition k's releasing callback has
	// returned (nil for acquisitions without one): an operation is compared
	// with the model only once every callback it decided has run, wherever
	// it runs.
	var ran []chan struct{}
	// call is the call of weight k: the Semaphore's own methods for 1.
	call := func(k int) fuzzCall {
		if k == 1 {
			return sem
		}
		return sem.Call(k)
	}
	m := &refModel{cfg: cfg, available: cfg.MaxConcurrentCalls, now: clock.Now()}
	var acqs []*bulkhead.Acquisition
	var trace []string

	var live []int // acquisitions pending in the model at the last comparison
	compared := 0  // acquisitions made before the last comparison
	checked := 0   // events compared so far
	for i := 0; i+1 < len(data) && i < 2*fuzzMaxOps; i += 2 {
		op, arg := int(data[i])%fuzzOps, data[i+1]
		var desc string
		switch op {
		case opTry:
			k := fuzzWeight(arg)
			gotOK, wantOK := call(k).TryAcquirePermission(), m.try(k)
			desc = fmt.Sprintf("Call(%d).TryAcquirePermission() = %v", k, gotOK)
			if gotOK != wantOK {
				t.Fatalf("%s, model says %v; ops:\n%s", desc, wantOK, strings.Join(trace, "\n"))
			}
		case opAsync, opAsyncRelease:
			releaseOnDone := op == opAsyncRelease
			k := fuzzWeight(arg)
			a := call(k).AcquirePermissionAsync()
			var done chan struct{}
			if releaseOnDone {
				done = make(chan struct{})
				a.OnDone(func(err error) {
					defer close(done)
					if err == nil {
						call(k).FinishCall()
					}
				})
			}
			acqs = append(acqs, a)
			ran = append(ran, done)
			m.async(releaseOnDone, k)
			desc = fmt.Sprintf("#%d = Call(%d).AcquirePermissionAsync() (release in OnDone: %v)", len(acqs)-1, k, releaseOnDone)
		case opCancel:
			if len(acqs) == 0 {
				continue
			}
			k := int(arg) % len(acqs)
			gotOK, wantOK := acqs[k].Cancel(), m.cancel(k)
			desc = fmt.Sprintf("#%d.Cancel() = %v", k, gotOK)
			if gotOK != wantOK {
				t.Fatalf("%s, model says %v; ops:\n%s", desc, wantOK, strings.Join(trace, "\n"))
			}
		case opRelease, opComplete:
			finished := op == opComplete
			name := map[bool]string{false: "ReleasePermission", true: "FinishCall"}[finished]
			k := fuzzWeight(arg)
			before := m.metrics()
			wantOK := m.release(finished, k)
			panicMsg := func() (msg string) {
				defer func() {
					if v := recover(); v != nil {
						msg = fmt.Sprint(v)
					}
				}()
				if finished {
					call(k).FinishCall()
				} else {
					call(k).ReleasePermission()
				}
				return ""
			}()
			desc = fmt.Sprintf("Call(%d).%s() (panic: %q)", k, name, panicMsg)
			switch {
			case wantOK && panicMsg != "":
				t.Fatalf("%s panicked: %s; ops:\n%s", name, panicMsg, strings.Join(trace, "\n"))
			case !wantOK && panicMsg == "":
				t.Fatalf("%s with no permit held (%+v) did not panic; ops:\n%s", name, before, strings.Join(trace, "\n"))
			case !wantOK && !strings.Contains(panicMsg, `"fuzz"`):
				t.Fatalf("over-release panic %q does not name the bulkhead", panicMsg)
			}
		case opAdvance:
			d := time.Duration(arg%16) * 5 * time.Millisecond
			clock.Advance(d)
			m.advance(m.now.Add(d))
			desc = fmt.Sprintf("Advance(%v)", d)
		case opAdvanceExact:
			next, ok := clock.NextDeadline()
			if !ok {
				continue
			}
			clock.AdvanceTo(next)
			m.advance(next)
			desc = fmt.Sprintf("AdvanceTo(next timer %s)", next.Format("15:04:05.000"))
		case opChange:
			c := fuzzConfig(arg)
			err := sem.ChangeConfig(c)
			wantOK := m.change(c)
			desc = fmt.Sprintf("ChangeConfig(%+v) = %v", c, err)
			if (err == nil) != wantOK {
				t.Fatalf("%s, model accepts it: %v; ops:\n%s", desc, wantOK, strings.Join(trace, "\n"))
			}
			if err != nil && !errors.Is(err, bulkhead.ErrInvalidConfig) {
				t.Fatalf("%s: not a *ConfigError", desc)
			}
		}
		trace = append(trace, desc)
		for ; compared < len(acqs); compared++ {
			live = append(live, compared) // made by this operation
		}
		awaitCallbacks(t, m, ran, trace)
		awaitEvents(len(m.events), events, published)
		live = compareWithModel(t, sem, m, acqs, live, events(), &checked, trace)
	}
	// Wind down: cancel or release everything; nothing may be left.
	for k, a := range acqs {
		if a.Cancel() != m.cancel(k) {
			t.Fatalf("wind-down: #%d.Cancel() disagrees with the model; ops:\n%s", k, strings.Join(trace, "\n"))
		}
		// A cancel that grants hands the grants' callbacks to a fresh
		// goroutine; their releases may decide the next acquisitions.
		awaitCallbacks(t, m, ran, trace)
	}
	for m.metrics().InFlightCalls > 0 {
		m.release(false, 1)
		sem.ReleasePermission()
	}
	trace = append(trace, "wind-down")
	all := make([]int, len(acqs))
	for k := range all {
		all[k] = k
	}
	awaitCallbacks(t, m, ran, trace)
	awaitEvents(len(m.events), events, published)
	compareWithModel(t, sem, m, acqs, all, events(), &checked, trace)
	if n := clock.PendingTimers(); n != 0 {
		t.Fatalf("%d timer(s) armed with nobody waiting", n)
	}
}

// compareWithModel compares the Semaphore with the model after an
// operation, including the outcome of the acquisitions in check (those
// pending at the last comparison and those made since), and returns those
// still pending: a decided outcome is compared when it is decided, and
// once more at the end.
//
// The events since the last comparison (from *checked on) are compared in
// order, or as a multiset where the model says the operation delivered
// callbacks on several goroutines at once (refModel.unordered).
func compareWithModel(t *testing.T, sem *bulkhead.Semaphore, m *refModel, acqs []*bulkhead.Acquisition, check []int, got []modelEvent, checked *int, trace []string) (pending []int) {
	t.Helper()
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("after %s: %s\nops:\n%s", trace[len(trace)-1], fmt.Sprintf(format, args...), strings.Join(trace, "\n"))
	}
	if gm, wm := sem.Metrics(), m.metrics(); gm != wm {
		fail("Metrics() = %+v, model %+v", gm, wm)
	}
	if gc := sem.Config(); gc != m.cfg {
		fail("Config() = %+v, model %+v", gc, m.cfg)
	}
	for _, k := range check {
		a := acqs[k]
		ge, we := a.Err(), m.errOf(k)
		if we == bulkhead.ErrPending {
			pending = append(pending, k)
		}
		var gf, wf *bulkhead.FullError
		var gh, wh *bulkhead.TooHeavyError
		switch {
		case errors.As(we, &wf):
			if !errors.As(ge, &gf) || *gf != *wf {
				fail("#%d.Err() = %v, model %v", k, ge, we)
			}
		case errors.As(we, &wh):
			if !errors.As(ge, &gh) || *gh != *wh {
				fail("#%d.Err() = %v, model %v", k, ge, we)
			}
		case ge != we:
			fail("#%d.Err() = %v, model %v", k, ge, we)
		}
	}
	from := *checked
	if len(got) != len(m.events) {
		fail("events differ:\n got   %v\n model %v", got[from:], m.events[from:])
	}
	gotNew, wantNew := got[from:], m.events[from:]
	if m.unordered {
		gotNew, wantNew = sortedEvents(gotNew), sortedEvents(wantNew)
	}
	if !slices.Equal(gotNew, wantNew) {
		fail("events differ (in any order: %v):\n got   %v\n model %v", m.unordered, got[from:], m.events[from:])
	}
	*checked, m.unordered = len(got), false
	return pending
}

func sortedEvents(es []modelEvent) []modelEvent {
	return slices.SortedFunc(slices.Values(es), func(a, b modelEvent) int {
		if c := cmp.Compare(a.Type, b.Type); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Reason, b.Reason); c != 0 {
			return c
		}
		return a.Time.Compare(b.Time)
	})
}

// awaitCallbacks waits until the releasing callback of every acquisition
// the model has decided has returned: the callbacks a batch hands to fresh
// goroutines have started when the deciding call returns, not finished, and
// their releases may decide more. Should the Semaphore not decide what the
// model did, the wait ends after a bound and the test fails saying so.
func awaitCallbacks(t *testing.T, m *refModel, ran []chan struct{}, trace []string) {
	t.Helper()
	timeout := time.NewTimer(10 * time.Second)
	defer timeout.Stop()
	for k, a := range m.acqs {
		if ran[k] == nil || a.state == modelPending {
			continue
		}
		select {
		case <-ran[k]:
		case <-timeout.C:
			t.Fatalf("#%d is decided in the model but its callback has not returned after 10s; ops:\n%s", k, strings.Join(trace, "\n"))
		}
	}
}

// fuzzCall is what a call of FuzzSemaphore goes through: a SemaphoreCall,
// or the Semaphore itself for weight 1.
type fuzzCall interface {
	TryAcquirePermission() bool
	AcquirePermissionAsync() *bulkhead.Acquisition
	ReleasePermission()
	FinishCall()
}

// awaitEvents waits until the Semaphore has published at least want
// events: the grants of a Cancel or an enqueue are published by a fresh
// goroutine, which may not have run yet when the call returns. The listener
// leaves a token in published after each event, so the wait re-counts only
// when one came. Should they never be published, the wait ends after 10 s
// and the comparison that follows fails saying which are missing.
func awaitEvents(want int, events func() []modelEvent, published <-chan struct{}) {
	timeout := time.NewTimer(10 * time.Second)
	defer timeout.Stop()
	for len(events()) < want {
		select {
		case <-published:
		case <-timeout.C:
			return
		}
	}
}
