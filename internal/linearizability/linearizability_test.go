package linearizability_test

import (
	"cmp"
	"fmt"
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
	"github.com/rxbulkhead/bulkhead/internal/semhook"
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
	return 100
}

const (
	clients       = 4
	opsPerClient  = 12
	checkTimeout  = 10 * time.Second
	neverExpiring = time.Hour // on a clock nobody advances
)

// historyConfig is one configuration of TestConcurrentHistoriesAreLinearizable.
type historyConfig struct {
	name   string
	cfg    bulkhead.Config
	limits []int           // values ChangeConfig sets for MaxConcurrentCalls
	waits  []time.Duration // values ChangeConfig sets for MaxWaitDuration
	// advances are the steps by which clients advance the clock, which
	// runs the expiry sweeps; batch is the sweeps' batch size (0: the
	// default).
	advances []time.Duration
	batch    int
	// listener registers an event listener, so that OnComplete publishes
	// CallFinished between its grant and the grant's delivery (see
	// TestFinishedListenerSeesNoFreePermitWhileCallsWait).
	listener bool
	// callbacks makes clients register OnDone callbacks that re-enter
	// (read, release, cancel, try, ChangeConfig), panic where a recorded
	// operation recovers it, and, with block, sometimes block first.
	callbacks, block bool
	// weights are the weights of the clients' calls (Semaphore.Call(k));
	// none: weight 1 only, through the Semaphore's own methods.
	weights []int
	// ops is the random operations per client (0: opsPerClient).
	ops int
}

// Waits of the expiry configurations, in nanoseconds of the history's
// virtual clock.
var (
	shortWaits = []time.Duration{5, 20, 40}
	steps      = []time.Duration{1, 10, 25}
)

var historyConfigs = []historyConfig{
	{name: "FIFO_bounded", cfg: bulkhead.Config{MaxConcurrentCalls: 2, MaxWaitDuration: neverExpiring, MaxQueuedCalls: 3}},
	{name: "FIFO_unbounded_ChangeConfig", cfg: bulkhead.Config{MaxConcurrentCalls: 2, MaxWaitDuration: neverExpiring, MaxQueuedCalls: bulkhead.Unbounded}, limits: []int{1, 2, 3}},
	{name: "LIFO_evicting", cfg: bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: neverExpiring, MaxQueuedCalls: 2, QueueOrder: bulkhead.LIFO}},
	{name: "LIFO_ChangeConfig", cfg: bulkhead.Config{MaxConcurrentCalls: 2, MaxWaitDuration: neverExpiring, MaxQueuedCalls: 3, QueueOrder: bulkhead.LIFO}, limits: []int{1, 3}},
	{name: "FIFO_no_wait", cfg: bulkhead.Config{MaxConcurrentCalls: 2}, limits: []int{1, 2}},
	{name: "FIFO_with_event_listener", cfg: bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: neverExpiring, MaxQueuedCalls: 3}, listener: true},
	{name: "FIFO_callbacks_panicking", cfg: bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: neverExpiring, MaxQueuedCalls: bulkhead.Unbounded}, callbacks: true},
	{name: "FIFO_callbacks_ChangeConfig", cfg: bulkhead.Config{MaxConcurrentCalls: 2, MaxWaitDuration: neverExpiring, MaxQueuedCalls: bulkhead.Unbounded}, limits: []int{1, 2, 3}, callbacks: true, block: true},
	{name: "LIFO_evicting_callbacks_panicking", cfg: bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: neverExpiring, MaxQueuedCalls: 2, QueueOrder: bulkhead.LIFO}, listener: true, callbacks: true},
	{name: "LIFO_callbacks_ChangeConfig", cfg: bulkhead.Config{MaxConcurrentCalls: 2, MaxWaitDuration: neverExpiring, MaxQueuedCalls: 3, QueueOrder: bulkhead.LIFO}, limits: []int{1, 3}, callbacks: true},
	// Expiry: clients advance the clock, so sweeps race grants, cancels
	// and reads; ChangeConfig shortens and lengthens the wait, so the
	// queue holds several runs of deadlines.
	{name: "FIFO_expiry", cfg: bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: 20, MaxQueuedCalls: bulkhead.Unbounded}, waits: shortWaits, advances: steps},
	{name: "FIFO_expiry_callbacks_blocking", cfg: bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: 20, MaxQueuedCalls: bulkhead.Unbounded}, waits: shortWaits, advances: steps, callbacks: true, block: true},
	{name: "FIFO_expiry_batches_of_1_ChangeConfig", cfg: bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: 20, MaxQueuedCalls: bulkhead.Unbounded}, limits: []int{1, 2}, waits: shortWaits, advances: steps, batch: 1, callbacks: true},
	{name: "FIFO_expiry_batches_of_2_NoWait_NoTimeout_listener", cfg: bulkhead.Config{MaxConcurrentCalls: 2, MaxWaitDuration: 10, MaxQueuedCalls: 4}, waits: []time.Duration{0, 5, 10, bulkhead.NoTimeout}, advances: steps, batch: 2, listener: true, callbacks: true},
	{name: "LIFO_expiry_evicting_batches_of_1", cfg: bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: 20, MaxQueuedCalls: 2, QueueOrder: bulkhead.LIFO}, waits: []time.Duration{5, 40, bulkhead.NoTimeout}, advances: steps, batch: 1, callbacks: true, block: true},
	// Weighted calls (issue 27): weights 1 to 3 on 3 permits, so that a
	// heavy waiter at the front holds lighter ones back or lets them pass
	// (bounded bypass), and a ChangeConfig to 2 rejects the heavier
	// waiters (TooHeavy), as does a call heavier than the limit in force.
	// The callbacks configuration runs 16 operations per client: longer
	// histories reach the bypass bound more often.
	{name: "FIFO_weighted_ChangeConfig", cfg: bulkhead.Config{MaxConcurrentCalls: 3, MaxWaitDuration: neverExpiring, MaxQueuedCalls: bulkhead.Unbounded}, limits: []int{2, 3}, weights: weights},
	{name: "LIFO_weighted_evicting_ChangeConfig", cfg: bulkhead.Config{MaxConcurrentCalls: 3, MaxWaitDuration: neverExpiring, MaxQueuedCalls: 3, QueueOrder: bulkhead.LIFO}, limits: []int{2, 3}, weights: weights},
	{name: "FIFO_weighted_callbacks_ChangeConfig", cfg: bulkhead.Config{MaxConcurrentCalls: 3, MaxWaitDuration: neverExpiring, MaxQueuedCalls: bulkhead.Unbounded}, limits: []int{2, 3}, callbacks: true, block: true, weights: weights, ops: 16},
	{name: "FIFO_weighted_expiry_batches_of_1_ChangeConfig", cfg: bulkhead.Config{MaxConcurrentCalls: 3, MaxWaitDuration: 20, MaxQueuedCalls: bulkhead.Unbounded}, limits: []int{2, 3}, waits: shortWaits, advances: steps, batch: 1, callbacks: true, weights: weights},
}

// weights are the weights of the weighted configurations' calls.
var weights = []int{1, 2, 3}

// TestConcurrentHistoriesAreLinearizable records many short histories of
// clients racing on one Semaphore (TryAcquirePermission,
// AcquirePermissionAsync, Cancel, reading and awaiting outcomes, FinishCall
// and ReleasePermission, ChangeConfig, Metrics, advancing the clock, which
// runs expiry sweeps recorded batch by batch, and in the *callbacks*
// configurations OnDone callbacks that re-enter, block and panic) and
// checks each one with porcupine against linearizability.Model.
func TestConcurrentHistoriesAreLinearizable(t *testing.T) {
	n := historiesPerConfig(t)
	total := 0
	var weighted linearizability.PassStats
	weightedRan, weightedConfigs := 0, 0
	for ci, tc := range historyConfigs {
		if tc.weights != nil {
			weightedConfigs++
		}
		t.Run(tc.name, func(t *testing.T) {
			model := linearizability.Model(tc.cfg)
			var ok, unknown, ops, overlapping int
			var sum historySummary
			var passes linearizability.PassStats
			for h := range n {
				history := recordHistory(t, tc, uint64(ci)<<32|uint64(h), &sum)
				ops += len(history)
				overlapping += countOverlapping(history)
				res, info := porcupine.CheckOperationsVerbose(model, history, checkTimeout)
				switch res {
				case porcupine.Ok:
					ok++
					passes.Add(replay(t, tc.cfg, h, history, info))
				case porcupine.Unknown:
					unknown++
				default:
					t.Fatalf("history %d is not linearizable (%d operations):\n%s\nlongest linearizable prefixes: %v",
						h, len(history), describe(model, history), info.PartialLinearizations())
				}
			}
			total += ok
			t.Logf("%s: %d histories (%d operations, %d%% overlapping another client's; %s; along the linearizations: %s) checked: %d linearizable, %d undecided within %v",
				tc.name, n, ops, 100*overlapping/max(ops, 1), sum.String(), passString(passes), ok, unknown, checkTimeout)
			if tc.weights != nil {
				weighted.Add(passes)
				weightedRan++
			}
			if unknown > n/100 {
				t.Errorf("%d of %d histories could not be decided within %v", unknown, n, checkTimeout)
			}
		})
	}
	t.Logf("%d histories checked linearizable in all; the weighted ones' linearizations: %s", total, passString(weighted))
	// The weighted histories must exercise every part of the bypass rule,
	// or their passing says little about it (all of them together: LIFO
	// alone seldom reaches the bound).
	if n >= 50 && weightedRan == weightedConfigs && !t.Failed() && (weighted.Bypassing == 0 || weighted.HeldBack == 0 || weighted.Renewed == 0 || weighted.TooHeavy == 0) {
		t.Errorf("the weighted histories left part of the bypass rule unexercised: %s", passString(weighted))
	}
}

// replay runs the linearization porcupine found for history through the
// model again, counting what its passes did.
func replay(t *testing.T, cfg bulkhead.Config, h int, history []porcupine.Operation, info porcupine.LinearizationInfo) linearizability.PassStats {
	t.Helper()
	lins := info.PartialLinearizationsOperations()
	if len(lins) != 1 || len(lins[0]) == 0 || len(lins[0][0]) != len(history) {
		t.Fatalf("history %d: porcupine found it linearizable but gave no complete linearization", h)
	}
	st, ok := linearizability.Replay(cfg, lins[0][0])
	if !ok {
		t.Fatalf("history %d: the model refuses the linearization porcupine found for it", h)
	}
	return st
}

func passString(p linearizability.PassStats) string {
	return fmt.Sprintf("%d passes, %d times a waiter did not fit, %d grants past one (bypassed up to %d), %d held back by the bound, %d renewals, %d too heavy",
		p.Passes, p.PassedOver, p.Bypassing, p.MaxBypassed, p.HeldBack, p.Renewed, p.TooHeavy)
}

// historySummary adds up what the histories of a configuration did.
type historySummary struct {
	inCallbacks, ticks, sweeps, grants, expired int
	panics, blocked, overtook, fresh            int64
}

func (s *historySummary) add(h []porcupine.Operation, st *linearizability.Stats) {
	for _, o := range h {
		if o.ClientId >= 1000 {
			s.inCallbacks++
		}
		switch o.Input.(linearizability.Input).Kind {
		case linearizability.Tick:
			s.ticks++
		case linearizability.Swept:
			s.sweeps++
		case linearizability.Grant:
			s.grants++
		case linearizability.Expire:
			s.expired++
		}
	}
	s.panics += st.Panics.Load()
	s.blocked += st.Blocked.Load()
	s.overtook += st.Overtook.Load()
	s.fresh += st.Fresh.Load()
}

func (s *historySummary) String() string {
	return fmt.Sprintf("%d operations in callbacks, %d grants, %d clock steps, %d sweeps expiring %d waiters, "+
		"callbacks: %d panics, %d blocked (%d overtaken by a later callback meanwhile), %d on a fresh goroutine",
		s.inCallbacks, s.grants, s.ticks, s.sweeps, s.expired, s.panics, s.blocked, s.overtook, s.fresh)
}

// recordHistory runs clients on a fresh Semaphore and returns their
// history. With a clock that clients advance, it also checks that once
// every client has done its random operations, advancing the clock past
// the longest wait leaves no call queued (unless one may wait without a
// deadline): no wait outlives its deadline for want of a timer.
func recordHistory(t *testing.T, tc historyConfig, seed uint64, sum *historySummary) []porcupine.Operation {
	t.Helper()
	r := &linearizability.Recorder{Config: tc.cfg, Limits: tc.limits, Waits: tc.waits, Advances: tc.advances,
		Callbacks: tc.callbacks, Panics: tc.callbacks, Block: tc.block, Weights: tc.weights}
	r.Clock = linearizability.NewClock(r, tc.batch)
	defer semhook.Set(r.Clock.Hooks())()
	s, err := bulkhead.New("linearizability", tc.cfg, bulkhead.WithClock(r.Clock))
	if err != nil {
		t.Fatal(err)
	}
	if tc.listener {
		defer s.OnEvent(func(bulkhead.Event) {})()
	}
	longest, open := tc.cfg.MaxWaitDuration, tc.cfg.MaxWaitDuration == bulkhead.NoTimeout
	for _, w := range tc.waits {
		if w == bulkhead.NoTimeout {
			open = true
		} else {
			longest = max(longest, w)
		}
	}
	var wg, arrived sync.WaitGroup
	arrived.Add(clients)
	start, cleanup := make(chan struct{}), make(chan struct{}) // all clients start at once, for overlap
	for c := range clients {
		rng := rand.New(rand.NewPCG(seed, uint64(c)))
		wg.Go(func() {
			<-start
			r.Client(s, c, cmp.Or(tc.ops, opsPerClient), rng, func() { arrived.Done(); <-cleanup })
		})
	}
	close(start)
	arrived.Wait()
	if len(tc.advances) > 0 {
		r.Advance(clients, longest+1)
		if q := s.Metrics().QueuedCalls; q != 0 && !open {
			close(cleanup)
			wg.Wait()
			t.Fatalf("history %d: %d calls still queued after the clock passed every deadline:\n%s",
				seed, q, describe(linearizability.Model(tc.cfg), r.History()))
		}
	}
	close(cleanup)
	wg.Wait()
	r.Wait()
	if m := s.Metrics(); m.InFlightCalls != 0 || m.QueuedCalls != 0 {
		t.Fatalf("history %d left %d permits held and %d calls queued", seed, m.InFlightCalls, m.QueuedCalls)
	}
	h := r.History()
	sum.add(h, r.Stats())
	return h
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
