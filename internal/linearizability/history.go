package linearizability

import (
	"errors"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/anishathalye/porcupine"

	bulkhead "github.com/rxbulkhead/bulkhead"
)

// Recorder records the operations of several clients on one Semaphore.
// Call and return times come from one atomic counter, so they respect real
// time order across goroutines.
type Recorder struct {
	// NoMetrics leaves Metrics out of the operations a Client runs.
	NoMetrics bool

	clock atomic.Int64
	ids   atomic.Int64
	mu    sync.Mutex
	ops   []porcupine.Operation
}

func (r *Recorder) record(client int, in Input, f func() Output) Output {
	call := r.clock.Add(1)
	// Yielding inside the interval widens it (it still contains the
	// operation), so that more operations overlap and their order matters.
	runtime.Gosched()
	out := f()
	runtime.Gosched()
	ret := r.clock.Add(1)
	r.mu.Lock()
	r.ops = append(r.ops, porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: ret})
	r.mu.Unlock()
	return out
}

// History returns the operations recorded so far.
func (r *Recorder) History() []porcupine.Operation {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]porcupine.Operation(nil), r.ops...)
}

// outcomeOf reads what Err says now.
func outcomeOf(a *bulkhead.Acquisition) Outcome {
	var fe *bulkhead.FullError
	switch err := a.Err(); {
	case err == nil:
		return Granted
	case err == bulkhead.ErrPending:
		return Pending
	case err == bulkhead.ErrCancelled:
		return Cancelled
	case errors.As(err, &fe) && fe.Reason == bulkhead.Evicted:
		return Evicted
	case errors.As(err, &fe) && fe.Reason == bulkhead.NoWait:
		return RejectedNoWait
	case errors.As(err, &fe) && fe.Reason == bulkhead.QueueFull:
		return RejectedQueueFull
	}
	return Outcome(255) // unknown: no model step accepts it
}

// Client runs ops random operations on s as client number id, recording
// them in r, and gives back every permit and withdraws every acquisition
// it still has at the end (also recorded). limits are the values Change
// may set.
func (r *Recorder) Client(s *bulkhead.Semaphore, id, ops int, rng *rand.Rand, limits []int) {
	held := 0
	var open []openAcq
	take := func(k int) { open = append(open[:k], open[k+1:]...) }
	for range ops {
		switch op := rng.IntN(100); {
		case op < 15:
			if r.record(id, Input{Kind: Try}, func() Output { return Output{OK: s.TryAcquirePermission()} }).OK {
				held++
			}
		case op < 40:
			n := int(r.ids.Add(1))
			var a *bulkhead.Acquisition
			out := r.record(id, Input{Kind: Acquire, ID: n}, func() Output {
				a = s.AcquirePermissionAsync()
				switch o := outcomeOf(a); {
				case a == bulkhead.GrantedAcquisition():
					return Output{Outcome: Granted}
				case o == RejectedNoWait || o == RejectedQueueFull:
					return Output{Outcome: o}
				}
				return Output{Outcome: Queued}
			})
			switch out.Outcome {
			case Granted:
				held++
			case Queued:
				open = append(open, openAcq{n, a})
			}
		case op < 52 && len(open) > 0:
			k := rng.IntN(len(open))
			held += r.cancel(id, open[k])
			take(k)
		case op < 67 && len(open) > 0:
			k := rng.IntN(len(open))
			switch r.record(id, Input{Kind: Read, ID: open[k].id}, func() Output { return Output{Outcome: outcomeOf(open[k].a)} }).Outcome {
			case Granted:
				held++
				take(k)
			case Evicted:
				take(k)
			}
		case op < 87 && held > 0:
			held--
			r.record(id, Input{Kind: Release}, func() Output {
				if rng.IntN(2) == 0 {
					s.FinishCall()
				} else {
					s.ReleasePermission()
				}
				return Output{}
			})
		case op < 92 && len(limits) > 0:
			n := limits[rng.IntN(len(limits))]
			r.record(id, Input{Kind: Change, N: n}, func() Output {
				cfg := s.Config()
				cfg.MaxConcurrentCalls = n
				if err := s.ChangeConfig(cfg); err != nil {
					panic(err)
				}
				return Output{}
			})
		case !r.NoMetrics:
			r.record(id, Input{Kind: Metrics}, func() Output { return Output{Metrics: s.Metrics()} })
		}
	}
	for _, o := range open {
		held += r.cancel(id, o)
	}
	for ; held > 0; held-- {
		r.record(id, Input{Kind: Release}, func() Output { s.FinishCall(); return Output{} })
	}
}

type openAcq struct {
	id int
	a  *bulkhead.Acquisition
}

// cancel withdraws o, or, if its outcome was decided first, awaits it; it
// returns the number of permits the client got (0 or 1).
func (r *Recorder) cancel(client int, o openAcq) int {
	if r.record(client, Input{Kind: Cancel, ID: o.id}, func() Output { return Output{OK: o.a.Cancel()} }).OK {
		return 0
	}
	out := r.record(client, Input{Kind: Await, ID: o.id}, func() Output {
		<-o.a.Done()
		return Output{Outcome: outcomeOf(o.a)}
	})
	if out.Outcome == Granted {
		return 1
	}
	return 0
}
