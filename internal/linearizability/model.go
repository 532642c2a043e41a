package linearizability

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/anishathalye/porcupine"

	bulkhead "github.com/rxbulkhead/bulkhead"
)

// Kind is an operation of a history.
type Kind uint8

// Operations of a history. Each Input names one; the Output of each is
// described next to it.
//
// Try, Acquire and Release carry the call's weight in Input.Weight (0 is
// 1): Semaphore.Call(Weight)'s method, or, for weight 1, the Semaphore's
// own.
const (
	// Try: TryAcquirePermission; Output.OK.
	Try Kind = iota
	// Acquire: AcquirePermissionAsync for acquisition ID; Output.Outcome is
	// what it returned: Granted (at once), RejectedNoWait,
	// RejectedQueueFull, TooHeavy (a weight above MaxConcurrentCalls), or
	// Queued (also when the pass its enqueue ran granted it before it
	// returned: the Grant is an operation of its own; and when a
	// concurrent Change rejected it as too heavy before it returned, which
	// Recorder.History tells from a TooHeavy at once by the Reject).
	Acquire
	// Cancel: Cancel of acquisition ID; Output.OK.
	Cancel
	// Read: the outcome of acquisition ID as Err says at that moment
	// (Pending, Granted, Evicted or Cancelled); Output.Outcome. Pending is
	// right only while the acquisition is undecided: a decision is visible
	// at once.
	Read
	// Await: waits for Done of acquisition ID, which is known to be
	// decided, then reads its outcome; Output.Outcome.
	Await
	// Release: FinishCall or ReleasePermission of the Weight permits of a
	// call the client holds; no output. The permits are free after it: the
	// grants its pass makes, if calls wait, are operations of their own
	// (Grant).
	Release
	// Change: ChangeConfig to MaxConcurrentCalls = Input.N and
	// MaxWaitDuration = Input.Wait (all else as the model's cfg); no
	// output. The rejections (Reject) and grants (Grant) it makes are
	// operations of their own.
	Change
	// Metrics: Output.Metrics.
	Metrics
	// Watch: OnDone of acquisition ID registers a callback; no output and
	// no effect on the model (what the callback does is recorded as
	// operations of its own).
	Watch
	// Tick: the clock moves forward to Input.At (the time since the
	// clock's start); no output. It is recorded around the clock's own
	// critical section, so it is atomic.
	Tick
	// Grant: the Semaphore grants acquisition ID its permits: the next
	// waiter that the pass under way grants (see Model). It is recorded
	// around the waiter's decision, inside the critical section of the
	// Release, Change, Acquire, Cancel or sweep (Swept) that ran the pass
	// (internal/semhook). While a decision of a critical section is owed,
	// the only operations that may happen are the owed Grant and Reject
	// operations, in order, and what takes no lock (Read, Await, Watch,
	// Tick, a Cancel that lost): a grant is made in the same critical
	// section that made it possible.
	Grant
	// Expire: the Semaphore's sweep rejects acquisition ID with
	// WaitTimeout: the oldest waiter whose deadline is at or before the
	// clock. It is recorded around the waiter's decision, inside a batch of
	// the sweep (internal/semhook).
	Expire
	// Swept: the last batch of a sweep has ended: no waiter whose deadline
	// is at or before the clock is left. Recorded around the batch, whose
	// end runs a pass if a permit is free (an expired waiter may have been
	// a heavy one that held others back).
	Swept
	// Reject: a ChangeConfig rejects queued acquisition ID with a
	// *TooHeavyError: the new MaxConcurrentCalls is below its weight. The
	// Change rejects every such waiter, from the head of the queue, before
	// its pass; each is recorded around its decision, as a Grant is.
	Reject
)

// Each decision of a critical section that decides several outcomes (a
// sweep's batch, a ChangeConfig that grants several waiters) is an
// operation of its own, Grant or Expire, because the Semaphore makes each
// visible at once, one after the other, to readers that take no lock (Err,
// Done): a reader may see the first decided and then the second still
// pending. The history in which a batch was one atomic step failed on such
// reads (about once in 1,500 histories under the race detector).

// Outcome is what an acquisition is, or was when it was created.
type Outcome uint8

// Outcomes.
const (
	Pending Outcome = iota
	Granted
	RejectedNoWait
	RejectedQueueFull
	Queued
	Evicted
	Cancelled
	Expired  // rejected with WaitTimeout
	TooHeavy // rejected with a *TooHeavyError: at once, or by a Change
)

func (o Outcome) String() string {
	if int(o) >= len(outcomeNames) {
		return fmt.Sprintf("outcome(%d)", o)
	}
	return outcomeNames[o]
}

var outcomeNames = [...]string{"pending", "granted", "rejected(no wait)", "rejected(queue full)", "queued", "evicted", "cancelled", "expired", "too heavy"}

// Input is the input of one operation.
type Input struct {
	Kind   Kind
	ID     int           // the acquisition, for Acquire, Cancel, Read, Await
	Weight int           // the call's weight, for Try, Acquire, Release (0: 1)
	N      int           // the new limit, for Change
	Wait   time.Duration // the new MaxWaitDuration, for Change
	At     time.Duration // the clock's new time, for Tick
}

// Output is the output of one operation.
type Output struct {
	OK      bool
	Outcome Outcome
	Metrics bulkhead.Metrics
}

// never is the deadline of a wait without one (NoTimeout).
const never time.Duration = math.MaxInt64

// maxPassedOver is how many waiters one pass looks at without granting
// them before it stops (the Semaphore's bound on a release's lock hold).
const maxPassedOver = 64

// waiter is a queued acquisition: its weight, its deadline (never: none),
// and whether a pass has passed it over (marked it) while it waits.
type waiter struct {
	id       int
	weight   int
	deadline time.Duration
	passed   bool
}

// decision is a decision that a critical section has made and not yet made
// visible: a Grant or a Reject of acquisition id.
type decision struct {
	kind Kind
	id   int
}

// state is the model's state. Steps never modify a state: they return a
// new one.
type state struct {
	limit     int
	available int           // may be negative after a shrinking Change
	wait      time.Duration // MaxWaitDuration in force
	now       time.Duration // the clock, since its start
	queue     []waiter      // oldest first
	// bypassed is the permits granted past a passed-over waiter since no
	// passed-over waiter was queued (the Semaphore's bypassed count).
	bypassed int
	// owed are the decisions of the critical section under way that are
	// not visible yet, in the order it makes them visible; their waiters
	// have left queue.
	owed    []decision
	decided map[int]Outcome // Granted, Evicted, Cancelled, Expired or TooHeavy
}

func (s state) clone() state {
	s.queue = slices.Clone(s.queue)
	s.owed = slices.Clone(s.owed)
	s.decided = maps.Clone(s.decided)
	return s
}

// index returns the position of acquisition id in the queue, or -1.
func (s *state) index(id int) int {
	return slices.IndexFunc(s.queue, func(w waiter) bool { return w.id == id })
}

// deadline is the deadline of a call queued now.
func (s *state) deadline() time.Duration {
	if s.wait == bulkhead.NoTimeout || s.now > never-s.wait {
		return never
	}
	return s.now + s.wait
}

// leave removes queue[k], whatever decided it, and returns it. If it was
// the last passed-over waiter, the bypass allowance renews: bypassed goes
// back to 0.
func (s *state) leave(k int, st *PassStats) waiter {
	w := s.queue[k]
	s.queue = slices.Delete(s.queue, k, k+1)
	if w.passed && !slices.ContainsFunc(s.queue, func(w waiter) bool { return w.passed }) {
		if s.bypassed > 0 && st != nil {
			st.Renewed++
		}
		s.bypassed = 0
	}
	return w
}

// passIfFree runs a pass if a call waits and a permit is free: what the
// Semaphore does at the end of a release, a ChangeConfig, an enqueue, a
// winning Cancel and a sweep (a pass with no permit free does nothing).
func (s *state) passIfFree(lifo bool, st *PassStats) {
	if len(s.queue) > 0 && s.available > 0 {
		s.pass(lifo, st)
	}
}

// pass is the rule of docs/design.md, "Weighted calls on a Semaphore". In
// grant order (FIFO from the head, LIFO from the tail) it grants every
// waiter that fits (its weight is at most the free permits). A waiter that
// does not fit is passed over (marked); the waiters behind it in this pass
// may still be granted, each adding its weight to bypassed, but only while
// bypassed stays within the limit: one that fits but would take bypassed
// past it is held back (and marked too if its weight is above 1; one of
// weight 1 held back holds back everyone behind it, so it needs no mark).
// The pass stops at the end of the queue, when no permit is free, or once
// it has looked at maxPassedOver waiters it did not grant. Its grants are
// owed, each made visible by a Grant operation. With weight-1 waiters only,
// it grants the first waiters in grant order, one per free permit.
func (s *state) pass(lifo bool, st *PassStats) {
	order := make([]int, len(s.queue))
	for i, w := range s.queue {
		order[i] = w.id
	}
	if lifo {
		slices.Reverse(order)
	}
	if st != nil {
		st.Passes++
	}
	free := s.available
	blocked := false // a waiter ahead in this pass does not fit
	skipped := 0
	for _, id := range order {
		if free <= 0 || skipped >= maxPassedOver {
			break
		}
		k := s.index(id)
		w := &s.queue[k]
		switch {
		case w.weight > free:
			w.passed, blocked = true, true
			skipped++
			if st != nil {
				st.PassedOver++
			}
		case blocked && s.bypassed+w.weight > s.limit:
			if w.weight > 1 {
				w.passed = true
			}
			skipped++
			if st != nil {
				st.HeldBack++
			}
		default:
			weight := w.weight
			if blocked {
				s.bypassed += weight
				if st != nil {
					st.Bypassing++
					st.MaxBypassed = max(st.MaxBypassed, s.bypassed)
				}
			}
			s.leave(k, st)
			s.available -= weight
			free -= weight
			s.owed = append(s.owed, decision{Grant, id})
		}
	}
}

// takesNoLock reports whether an operation may happen inside another's
// critical section: it does not take the Semaphore's lock (it reads an
// outcome, or registers a callback, which runs later), or does not touch
// the Semaphore (Tick), or is one of the decisions of that critical section
// (Grant, Reject). A Cancel that wins decides under the lock; one that
// finds the outcome decided returns false without it.
func takesNoLock(i Input, o Output) bool {
	switch i.Kind {
	case Read, Await, Watch, Tick, Grant, Reject:
		return true
	case Cancel:
		return !o.OK
	}
	return false
}

// weight is the call's weight (0 means 1).
func (i Input) weight() int { return max(i.Weight, 1) }

// PassStats counts what the passes and rejections of a linearization did
// (Replay): evidence that the histories exercise the bypass rule.
type PassStats struct {
	Passes      int // passes run (a permit free while a call waits)
	PassedOver  int // times a pass found a waiter heavier than the free permits
	Bypassing   int // grants past a passed-over waiter
	HeldBack    int // times a pass held back a waiter that fit: the bypass bound
	Renewed     int // times bypassed went back to 0 from above it
	MaxBypassed int // the largest bypassed count reached
	TooHeavy    int // *TooHeavyError rejections: at once (Acquire) or by a Change
}

// Add adds o to p.
func (p *PassStats) Add(o PassStats) {
	p.Passes += o.Passes
	p.PassedOver += o.PassedOver
	p.Bypassing += o.Bypassing
	p.HeldBack += o.HeldBack
	p.Renewed += o.Renewed
	p.MaxBypassed = max(p.MaxBypassed, o.MaxBypassed)
	p.TooHeavy += o.TooHeavy
}

// Model returns the sequential specification of a Semaphore created with
// cfg on a clock that starts at zero and moves only by Tick. Only
// MaxConcurrentCalls and MaxWaitDuration may change during a history
// (Change). A queued call's deadline is the clock at its Acquire plus the
// MaxWaitDuration then in force; it expires only by an Expire (the
// Semaphore's sweep, run by its timer), never earlier, and until then it
// may be granted or withdrawn like any waiter. It is issue 2's behaviour
// with issue 13's delivery (a decision is visible at once), issue 26's
// sweep (in queue order) and issue 27's weighted calls (a call of weight k
// takes k permits at once; bounded bypass, see state.pass; a weight above
// MaxConcurrentCalls is rejected at once, and a Change that lowers the
// limit below a queued waiter's weight rejects it), written as plainly as
// possible.
func Model(cfg bulkhead.Config) porcupine.Model {
	return porcupine.Model{
		Init: func() any {
			return state{limit: cfg.MaxConcurrentCalls, available: cfg.MaxConcurrentCalls, wait: cfg.MaxWaitDuration, decided: map[int]Outcome{}}
		},
		Step: step(cfg, nil),
		Equal: func(a, b any) bool {
			x, y := a.(state), b.(state)
			return x.limit == y.limit && x.available == y.available && x.wait == y.wait && x.now == y.now &&
				x.bypassed == y.bypassed && slices.Equal(x.queue, y.queue) && slices.Equal(x.owed, y.owed) &&
				maps.Equal(x.decided, y.decided)
		},
		Hash: func(st any) uint64 {
			s := st.(state)
			h := mix(uint64(s.limit), uint64(int64(s.available)))
			h = mix(mix(h, uint64(s.wait)), uint64(s.now))
			h = mix(h, uint64(s.bypassed))
			for _, w := range s.queue {
				passed := uint64(0)
				if w.passed {
					passed = 1
				}
				h = mix(mix(h, uint64(w.id)), uint64(w.deadline)^uint64(w.weight)<<56^passed<<63)
			}
			for _, d := range s.owed {
				h = mix(h, uint64(d.id)<<8|uint64(d.kind))
			}
			// The map: an order-independent sum of per-entry hashes.
			var d uint64
			for id, o := range s.decided {
				d += mix(uint64(id), uint64(o))
			}
			return mix(h, d)
		},
		DescribeOperation: func(in, out any) string { return describeOperation(in.(Input), out.(Output)) },
		DescribeState: func(st any) string {
			s := st.(state)
			return fmt.Sprintf("limit %d, available %d, wait %s, clock %v, queue %v, bypassed %d, owed %v, decided %v",
				s.limit, s.available, waitString(s.wait), s.now, s.queue, s.bypassed, s.owed, s.decided)
		},
	}
}

// Replay runs ops, in this order, through the model of cfg, counting what
// its passes and rejections do; ok is false if the model refuses one. Give
// it the linearization porcupine found for a history.
func Replay(cfg bulkhead.Config, ops []porcupine.Operation) (stats PassStats, ok bool) {
	f := step(cfg, &stats)
	var s any = state{limit: cfg.MaxConcurrentCalls, available: cfg.MaxConcurrentCalls, wait: cfg.MaxWaitDuration, decided: map[int]Outcome{}}
	for _, op := range ops {
		if ok, s = f(s, op.Input, op.Output); !ok {
			return stats, false
		}
	}
	return stats, true
}

// step is the model's step function; it counts in st (nil: nothing).
func step(cfg bulkhead.Config, st *PassStats) func(st, in, out any) (bool, any) {
	lifo := cfg.QueueOrder == bulkhead.LIFO
	return func(current, in, out any) (bool, any) {
		s, i, o := current.(state), in.(Input), out.(Output)
		if len(s.owed) > 0 && !takesNoLock(i, o) {
			return false, s
		}
		k := i.weight()
		switch i.Kind {
		case Try:
			free := s.available >= k && len(s.queue) == 0
			if o.OK != free {
				return false, s
			}
			if free {
				s.available -= k
			}
			return true, s
		case Acquire:
			s = s.clone()
			var want Outcome
			switch {
			case s.available >= k && len(s.queue) == 0:
				s.available -= k
				want = Granted
			case k > s.limit:
				want = TooHeavy
				if st != nil {
					st.TooHeavy++
				}
			case s.wait == 0:
				want = RejectedNoWait
			case len(s.queue) >= cfg.MaxQueuedCalls && !lifo:
				want = RejectedQueueFull
			default:
				for len(s.queue) >= cfg.MaxQueuedCalls {
					s.decided[s.leave(0, st).id] = Evicted
				}
				s.queue = append(s.queue, waiter{id: i.ID, weight: k, deadline: s.deadline()})
				// Behind a heavy waiter, a permit may be free for it.
				s.passIfFree(lifo, st)
				want = Queued
			}
			return o.Outcome == want, s
		case Cancel:
			n := s.index(i.ID)
			if o.OK != (n >= 0) {
				return false, s
			}
			if n >= 0 {
				s = s.clone()
				s.leave(n, st)
				s.decided[i.ID] = Cancelled
				// It may have held lighter ones back.
				s.passIfFree(lifo, st)
			}
			return true, s
		case Read, Await:
			d, isDecided := s.decided[i.ID]
			if o.Outcome == Pending {
				// Visible at once: pending means not decided.
				return i.Kind == Read && !isDecided, s
			}
			return isDecided && d == o.Outcome, s
		case Release:
			if s.limit-s.available < k {
				return false, s // more released than held
			}
			s = s.clone()
			s.available += k
			s.passIfFree(lifo, st)
			return true, s
		case Change:
			s = s.clone()
			s.available += i.N - s.limit
			s.limit = i.N
			s.wait = i.Wait
			// Waiters the new limit can never grant, from the head, then
			// the pass.
			for n := 0; n < len(s.queue); {
				if s.queue[n].weight <= s.limit {
					n++
					continue
				}
				s.owed = append(s.owed, decision{Reject, s.leave(n, st).id})
				if st != nil {
					st.TooHeavy++
				}
			}
			s.passIfFree(lifo, st)
			return true, s
		case Grant, Reject:
			if len(s.owed) == 0 || s.owed[0] != (decision{i.Kind, i.ID}) {
				return false, s
			}
			s = s.clone()
			s.owed = s.owed[1:]
			s.decided[i.ID] = Granted
			if i.Kind == Reject {
				s.decided[i.ID] = TooHeavy
			}
			return true, s
		case Watch:
			return true, s
		case Tick:
			if i.At < s.now {
				return false, s // time went back
			}
			s.now = i.At
			return true, s
		case Expire:
			n := slices.IndexFunc(s.queue, func(w waiter) bool { return w.deadline <= s.now })
			if n < 0 || s.queue[n].id != i.ID {
				return false, s
			}
			s = s.clone()
			s.leave(n, st)
			s.decided[i.ID] = Expired
			return true, s
		case Swept:
			if slices.ContainsFunc(s.queue, func(w waiter) bool { return w.deadline <= s.now }) {
				return false, s
			}
			// An expired waiter may have held lighter ones back.
			s = s.clone()
			s.passIfFree(lifo, st)
			return true, s
		case Metrics:
			want := bulkhead.Metrics{
				AvailableConcurrentCalls:  max(s.available, 0),
				MaxAllowedConcurrentCalls: s.limit,
				InFlightCalls:             s.limit - s.available,
				QueuedCalls:               len(s.queue),
				MaxQueuedCalls:            cfg.MaxQueuedCalls,
			}
			return o.Metrics == want, s
		}
		return false, s
	}
}

// describeOperation renders an operation as the call it records.
func describeOperation(i Input, o Output) string {
	call := ""
	if i.Weight > 1 {
		call = fmt.Sprintf("Call(%d).", i.Weight)
	}
	switch i.Kind {
	case Try:
		return fmt.Sprintf("%sTryAcquirePermission() = %v", call, o.OK)
	case Acquire:
		return fmt.Sprintf("%sAcquirePermissionAsync() #%d: %s", call, i.ID, o.Outcome)
	case Cancel:
		return fmt.Sprintf("#%d.Cancel() = %v", i.ID, o.OK)
	case Read:
		return fmt.Sprintf("#%d.Err(): %s", i.ID, o.Outcome)
	case Await:
		return fmt.Sprintf("<-#%d.Done(): %s", i.ID, o.Outcome)
	case Release:
		return call + "FinishCall()"
	case Change:
		return fmt.Sprintf("ChangeConfig(MaxConcurrentCalls: %d, MaxWaitDuration: %s)", i.N, waitString(i.Wait))
	case Tick:
		return fmt.Sprintf("clock -> %v", i.At)
	case Grant:
		return fmt.Sprintf("grant #%d", i.ID)
	case Reject:
		return fmt.Sprintf("reject #%d: too heavy", i.ID)
	case Expire:
		return fmt.Sprintf("expire #%d", i.ID)
	case Swept:
		return "sweep done"
	case Metrics:
		return fmt.Sprintf("Metrics() = %+v", o.Metrics)
	case Watch:
		return fmt.Sprintf("#%d.OnDone(callback)", i.ID)
	}
	return "?"
}

func waitString(d time.Duration) string {
	if d == bulkhead.NoTimeout {
		return "NoTimeout"
	}
	return d.String()
}

// String renders a waiter as #id@deadline, with ×weight after the id if it
// is above 1 and a * at the end if a pass passed it over.
func (w waiter) String() string {
	s := fmt.Sprintf("#%d", w.id)
	if w.weight > 1 {
		s += fmt.Sprintf("×%d", w.weight)
	}
	if w.deadline == never {
		s += "@never"
	} else {
		s += fmt.Sprintf("@%v", w.deadline)
	}
	if w.passed {
		s += "*"
	}
	return s
}

// String renders an owed decision.
func (d decision) String() string {
	if d.kind == Reject {
		return fmt.Sprintf("reject #%d", d.id)
	}
	return fmt.Sprintf("grant #%d", d.id)
}

// mix combines two words into a hash (the finaliser of splitmix64 over
// their combination).
func mix(a, b uint64) uint64 {
	x := a*0x9e3779b97f4a7c15 ^ b
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}
