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
const (
	// Try: TryAcquirePermission; Output.OK.
	Try Kind = iota
	// Acquire: AcquirePermissionAsync for acquisition ID; Output.Outcome is
	// what it returned: Granted (at once), RejectedNoWait,
	// RejectedQueueFull, or Queued.
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
	// Release: FinishCall or ReleasePermission of a permit the client
	// holds; no output. The permit is free after it: the grant it makes,
	// if a call waits, is an operation of its own (Grant).
	Release
	// Change: ChangeConfig to MaxConcurrentCalls = Input.N and
	// MaxWaitDuration = Input.Wait (all else as the model's cfg); no
	// output. The grants it makes are operations of their own (Grant).
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
	// Grant: the Semaphore grants acquisition ID a free permit: the
	// oldest waiter (FIFO) or the newest (LIFO). It is recorded around the
	// waiter's decision, inside the critical section of the Release or
	// Change that made it (internal/semhook). While a permit is free and a
	// call waits, the only operations that may happen are grants and what
	// takes no lock (Read, Await, Watch, Tick, a Cancel that lost): a grant
	// is made in the same critical section that freed the permit.
	Grant
	// Expire: the Semaphore's sweep rejects acquisition ID with
	// WaitTimeout: the oldest waiter whose deadline is at or before the
	// clock. It is recorded around the waiter's decision, inside a batch of
	// the sweep (internal/semhook).
	Expire
	// Swept: the last batch of a sweep has ended: no waiter whose deadline
	// is at or before the clock is left. Recorded around the batch.
	Swept
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
	Expired // rejected with WaitTimeout
)

func (o Outcome) String() string {
	if int(o) >= len(outcomeNames) {
		return fmt.Sprintf("outcome(%d)", o)
	}
	return outcomeNames[o]
}

var outcomeNames = [...]string{"pending", "granted", "rejected(no wait)", "rejected(queue full)", "queued", "evicted", "cancelled", "expired"}

// Input is the input of one operation.
type Input struct {
	Kind Kind
	ID   int           // the acquisition, for Acquire, Cancel, Read, Await
	N    int           // the new limit, for Change
	Wait time.Duration // the new MaxWaitDuration, for Change
	At   time.Duration // the clock's new time, for Tick
}

// Output is the output of one operation.
type Output struct {
	OK      bool
	Outcome Outcome
	Metrics bulkhead.Metrics
}

// never is the deadline of a wait without one (NoTimeout).
const never time.Duration = math.MaxInt64

// waiter is a queued acquisition and its deadline (never: none).
type waiter struct {
	id       int
	deadline time.Duration
}

// state is the model's state. Steps never modify a state: they return a
// new one.
type state struct {
	limit     int
	available int           // may be negative after a shrinking Change
	wait      time.Duration // MaxWaitDuration in force
	now       time.Duration // the clock, since its start
	queue     []waiter
	decided   map[int]Outcome // Granted, Evicted, Cancelled or Expired
}

func (s state) clone() state {
	s.queue = slices.Clone(s.queue)
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

// owesGrant reports whether a permit is free while a call waits: a state
// that lasts only inside the critical section that freed the permit,
// until its grants.
func (s *state) owesGrant() bool { return s.available > 0 && len(s.queue) > 0 }

// takesNoLock reports whether an operation may happen inside another's
// critical section: it does not take the Semaphore's lock (it reads an
// outcome, or registers a callback, which runs later), or does not touch
// the Semaphore (Tick). A Cancel that wins decides under the lock; one
// that finds the outcome decided returns false without it.
func takesNoLock(i Input, o Output) bool {
	switch i.Kind {
	case Read, Await, Watch, Tick, Grant:
		return true
	case Cancel:
		return !o.OK
	}
	return false
}

// Model returns the sequential specification of a Semaphore created with
// cfg on a clock that starts at zero and moves only by Tick. Only
// MaxConcurrentCalls and MaxWaitDuration may change during a history
// (Change). A queued call's deadline is the clock at its Acquire plus the
// MaxWaitDuration then in force; it expires only by an Expire (the
// Semaphore's sweep, run by its timer), never earlier, and until then it
// may be granted or withdrawn like any waiter. It is issue 2's behaviour
// with issue 13's delivery (a decision is visible at once) and issue 26's
// sweep (in queue order), written as plainly as possible.
func Model(cfg bulkhead.Config) porcupine.Model {
	lifo := cfg.QueueOrder == bulkhead.LIFO
	return porcupine.Model{
		Init: func() any {
			return state{limit: cfg.MaxConcurrentCalls, available: cfg.MaxConcurrentCalls, wait: cfg.MaxWaitDuration, decided: map[int]Outcome{}}
		},
		Step: func(st, in, out any) (bool, any) {
			s, i, o := st.(state), in.(Input), out.(Output)
			if s.owesGrant() && !takesNoLock(i, o) {
				return false, s
			}
			switch i.Kind {
			case Try:
				free := s.available > 0 && len(s.queue) == 0
				if o.OK != free {
					return false, s
				}
				if free {
					s.available--
				}
				return true, s
			case Acquire:
				s = s.clone()
				var want Outcome
				switch {
				case s.available > 0 && len(s.queue) == 0:
					s.available--
					want = Granted
				case s.wait == 0:
					want = RejectedNoWait
				case len(s.queue) >= cfg.MaxQueuedCalls && !lifo:
					want = RejectedQueueFull
				default:
					for len(s.queue) >= cfg.MaxQueuedCalls {
						s.decided[s.queue[0].id] = Evicted
						s.queue = s.queue[1:]
					}
					s.queue = append(s.queue, waiter{i.ID, s.deadline()})
					want = Queued
				}
				return o.Outcome == want, s
			case Cancel:
				k := s.index(i.ID)
				if o.OK != (k >= 0) {
					return false, s
				}
				if k >= 0 {
					s = s.clone()
					s.queue = slices.Delete(s.queue, k, k+1)
					s.decided[i.ID] = Cancelled
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
				if s.available >= s.limit {
					return false, s // more releases than grants
				}
				s = s.clone()
				s.available++
				return true, s
			case Change:
				s = s.clone()
				s.available += i.N - s.limit
				s.limit = i.N
				s.wait = i.Wait
				return true, s
			case Grant:
				if !s.owesGrant() {
					return false, s
				}
				k := 0
				if lifo {
					k = len(s.queue) - 1
				}
				if s.queue[k].id != i.ID {
					return false, s
				}
				s = s.clone()
				s.queue = slices.Delete(s.queue, k, k+1)
				s.decided[i.ID] = Granted
				s.available--
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
				k := slices.IndexFunc(s.queue, func(w waiter) bool { return w.deadline <= s.now })
				if k < 0 || s.queue[k].id != i.ID {
					return false, s
				}
				s = s.clone()
				s.queue = slices.Delete(s.queue, k, k+1)
				s.decided[i.ID] = Expired
				return true, s
			case Swept:
				return !slices.ContainsFunc(s.queue, func(w waiter) bool { return w.deadline <= s.now }), s
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
		},
		Equal: func(a, b any) bool {
			x, y := a.(state), b.(state)
			return x.limit == y.limit && x.available == y.available && x.wait == y.wait && x.now == y.now &&
				slices.Equal(x.queue, y.queue) && maps.Equal(x.decided, y.decided)
		},
		Hash: func(st any) uint64 {
			s := st.(state)
			h := mix(uint64(s.limit), uint64(int64(s.available)))
			h = mix(mix(h, uint64(s.wait)), uint64(s.now))
			for _, w := range s.queue {
				h = mix(mix(h, uint64(w.id)), uint64(w.deadline))
			}
			// The map: an order-independent sum of per-entry hashes.
			var d uint64
			for id, o := range s.decided {
				d += mix(uint64(id), uint64(o))
			}
			return mix(h, d)
		},
		DescribeOperation: func(in, out any) string {
			i, o := in.(Input), out.(Output)
			switch i.Kind {
			case Try:
				return fmt.Sprintf("TryAcquirePermission() = %v", o.OK)
			case Acquire:
				return fmt.Sprintf("AcquirePermissionAsync() #%d: %s", i.ID, o.Outcome)
			case Cancel:
				return fmt.Sprintf("#%d.Cancel() = %v", i.ID, o.OK)
			case Read:
				return fmt.Sprintf("#%d.Err(): %s", i.ID, o.Outcome)
			case Await:
				return fmt.Sprintf("<-#%d.Done(): %s", i.ID, o.Outcome)
			case Release:
				return "FinishCall()"
			case Change:
				return fmt.Sprintf("ChangeConfig(MaxConcurrentCalls: %d, MaxWaitDuration: %s)", i.N, waitString(i.Wait))
			case Tick:
				return fmt.Sprintf("clock -> %v", i.At)
			case Grant:
				return fmt.Sprintf("grant #%d", i.ID)
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
		},
		DescribeState: func(st any) string {
			s := st.(state)
			return fmt.Sprintf("limit %d, available %d, wait %s, clock %v, queue %v, decided %v",
				s.limit, s.available, waitString(s.wait), s.now, s.queue, s.decided)
		},
	}
}

func waitString(d time.Duration) string {
	if d == bulkhead.NoTimeout {
		return "NoTimeout"
	}
	return d.String()
}

// String renders a waiter as id@deadline.
func (w waiter) String() string {
	if w.deadline == never {
		return fmt.Sprintf("#%d@never", w.id)
	}
	return fmt.Sprintf("#%d@%v", w.id, w.deadline)
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
