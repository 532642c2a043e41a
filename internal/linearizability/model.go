package linearizability

import (
	"fmt"
	"maps"
	"slices"

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
	// holds; no output.
	Release
	// Change: ChangeConfig to MaxConcurrentCalls = Input.N (all else
	// unchanged); no output.
	Change
	// Metrics: Output.Metrics.
	Metrics
	// Watch: OnDone of acquisition ID registers a callback; no output and
	// no effect on the model (what the callback does is recorded as
	// operations of its own).
	Watch
)

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
)

func (o Outcome) String() string {
	return [...]string{"pending", "granted", "rejected(no wait)", "rejected(queue full)", "queued", "evicted", "cancelled"}[o]
}

// Input is the input of one operation.
type Input struct {
	Kind Kind
	ID   int // the acquisition, for Acquire, Cancel, Read, Await
	N    int // the new limit, for Change
}

// Output is the output of one operation.
type Output struct {
	OK      bool
	Outcome Outcome
	Metrics bulkhead.Metrics
}

// state is the model's state. Steps never modify a state: they return a
// new one.
type state struct {
	limit     int
	available int // may be negative after a shrinking Change
	queue     []int
	decided   map[int]Outcome // Granted, Evicted or Cancelled
}

func (s state) clone() state {
	s.queue = slices.Clone(s.queue)
	s.decided = maps.Clone(s.decided)
	return s
}

// grant hands free permits to waiters in queue order (FIFO from the head,
// LIFO from the tail).
func (s *state) grant(lifo bool) {
	for s.available > 0 && len(s.queue) > 0 {
		i := 0
		if lifo {
			i = len(s.queue) - 1
		}
		s.decided[s.queue[i]] = Granted
		s.queue = slices.Delete(s.queue, i, i+1)
		s.available--
	}
}

// Model returns the sequential specification of a Semaphore created with
// cfg, on a clock that never fires (so no wait expires). Only
// MaxConcurrentCalls may change during a history (Change). It is issue 2's behaviour
// with issue 13's delivery (a decision is visible at once), written as
// plainly as possible.
func Model(cfg bulkhead.Config) porcupine.Model {
	lifo := cfg.QueueOrder == bulkhead.LIFO
	return porcupine.Model{
		Init: func() any {
			return state{limit: cfg.MaxConcurrentCalls, available: cfg.MaxConcurrentCalls, decided: map[int]Outcome{}}
		},
		Step: func(st, in, out any) (bool, any) {
			s, i, o := st.(state), in.(Input), out.(Output)
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
				case cfg.MaxWaitDuration == 0:
					want = RejectedNoWait
				case len(s.queue) >= cfg.MaxQueuedCalls && !lifo:
					want = RejectedQueueFull
				default:
					for len(s.queue) >= cfg.MaxQueuedCalls {
						s.decided[s.queue[0]] = Evicted
						s.queue = s.queue[1:]
					}
					s.queue = append(s.queue, i.ID)
					want = Queued
				}
				return o.Outcome == want, s
			case Cancel:
				k := slices.Index(s.queue, i.ID)
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
				s.grant(lifo)
				return true, s
			case Change:
				s = s.clone()
				s.available += i.N - s.limit
				s.limit = i.N
				s.grant(lifo)
				return true, s
			case Watch:
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
		},
		Equal: func(a, b any) bool {
			x, y := a.(state), b.(state)
			return x.limit == y.limit && x.available == y.available && slices.Equal(x.queue, y.queue) &&
				maps.Equal(x.decided, y.decided)
		},
		Hash: func(st any) uint64 {
			s := st.(state)
			h := mix(uint64(s.limit), uint64(int64(s.available)))
			for _, id := range s.queue {
				h = mix(h, uint64(id))
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
				return fmt.Sprintf("ChangeConfig(MaxConcurrentCalls: %d)", i.N)
			case Metrics:
				return fmt.Sprintf("Metrics() = %+v", o.Metrics)
			case Watch:
				return fmt.Sprintf("#%d.OnDone(callback)", i.ID)
			}
			return "?"
		},
		DescribeState: func(st any) string {
			s := st.(state)
			return fmt.Sprintf("limit %d, available %d, queue %v, decided %v", s.limit, s.available, s.queue, s.decided)
		},
	}
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
