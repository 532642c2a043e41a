package linearizability

import (
	"errors"
	"fmt"
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
//
// With Callbacks set, clients also register OnDone callbacks that re-enter
// the bulkhead from whichever goroutine decides the outcome: they read
// their own outcome (which must be visible in the callback), give the
// permit back, cancel another client's acquisition, change the limit, and
// some panic after that. What a callback does is recorded as operations of
// a client of its own (callbackClient), inside the interval of the
// operation that ran it.
type Recorder struct {
	// NoMetrics leaves Metrics out of the operations a Client runs.
	NoMetrics bool
	// Callbacks makes clients register re-entrant, sometimes panicking,
	// OnDone callbacks.
	Callbacks bool

	clock atomic.Int64
	ids   atomic.Int64
	mu    sync.Mutex
	ops   []porcupine.Operation

	open      sync.Map       // acquisition ID -> *bulkhead.Acquisition not yet collected
	callbacks sync.WaitGroup // callbacks registered and not finished
	panics    atomic.Int64   // panics of callbacks that reached an operation
}

// callbackClient is the client number under which the operations of a
// callback registered by client c are recorded.
func callbackClient(c int) int { return 1000 + c }

// errCallbackPanic is what a panicking callback panics with.
var errCallbackPanic = errors.New("linearizability: callback panics on purpose")

// record runs f as one operation of client and records it. A panic of a
// callback that f ran (errCallbackPanic) ends f: the operation took effect
// before its callbacks ran, and out is what the operation returns in that
// case (Release and Change return nothing; Cancel's callbacks do not
// panic).
func (r *Recorder) record(client int, in Input, f func() Output) (out Output) {
	call := r.clock.Add(1)
	// Yielding inside the interval widens it (it still contains the
	// operation), so that more operations overlap and their order matters.
	runtime.Gosched()
	func() {
		defer func() {
			if p := recover(); p != nil {
				if p != errCallbackPanic {
					panic(p)
				}
				r.panics.Add(1)
			}
		}()
		out = f()
	}()
	runtime.Gosched()
	ret := r.clock.Add(1)
	r.mu.Lock()
	r.ops = append(r.ops, porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: ret})
	r.mu.Unlock()
	return out
}

// Wait waits for every callback registered by the clients to finish (a
// callback may run on a goroutine of its own after the operation that
// decided its outcome returned).
func (r *Recorder) Wait() { r.callbacks.Wait() }

// Panics returns how many callback panics reached an operation.
func (r *Recorder) Panics() int64 { return r.panics.Load() }

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
	var open []*openAcq
	take := func(k int) {
		r.open.Delete(open[k].id)
		open = append(open[:k], open[k+1:]...)
	}
	for range ops {
		switch op := rng.IntN(100); {
		case r.Callbacks && op < 10 && len(open) > 0:
			k := rng.IntN(len(open))
			if o := open[k]; !o.watched {
				o.watched = true
				seed := rng.Uint64()
				r.record(id, Input{Kind: Watch, ID: o.id}, func() Output { r.watch(s, id, o, seed, limits); return Output{} })
			}
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
				open = append(open, &openAcq{id: n, a: a})
				r.open.Store(n, a)
			}
		case op < 52 && len(open) > 0:
			k := rng.IntN(len(open))
			held += r.cancel(id, open[k])
			take(k)
		case op < 67 && len(open) > 0:
			k := rng.IntN(len(open))
			switch r.record(id, Input{Kind: Read, ID: open[k].id}, func() Output { return Output{Outcome: outcomeOf(open[k].a)} }).Outcome {
			case Granted:
				if !open[k].cbOwns {
					held++
				}
				take(k)
			case Evicted, Cancelled: // Cancelled: by another client's callback
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
		r.open.Delete(o.id)
	}
	for ; held > 0; held-- {
		r.record(id, Input{Kind: Release}, func() Output { s.FinishCall(); return Output{} })
	}
}

type openAcq struct {
	id      int
	a       *bulkhead.Acquisition
	watched bool // a callback is registered
	cbOwns  bool // the callback gives a grant back itself
}

// cancel withdraws o, or, if its outcome was decided first, awaits it; it
// returns the number of permits the client got (0 or 1).
func (r *Recorder) cancel(client int, o *openAcq) int {
	if r.record(client, Input{Kind: Cancel, ID: o.id}, func() Output { return Output{OK: o.a.Cancel()} }).OK {
		return 0
	}
	out := r.record(client, Input{Kind: Await, ID: o.id}, func() Output {
		<-o.a.Done()
		return Output{Outcome: outcomeOf(o.a)}
	})
	if out.Outcome == Granted && !o.cbOwns {
		return 1
	}
	return 0
}

// watch registers a callback on o for client and sets o.cbOwns if the
// callback gives a grant back itself. What the callback does, chosen from
// seed: read its own outcome (always), then one of: give the permit back
// (FinishCall or ReleasePermission), cancel another open acquisition,
// change the limit, or keep the permit for the client; and, now and then,
// panic at the end, but only where no limit changes: a ChangeConfig that
// grants several waiters runs some callbacks on fresh goroutines, where a
// panic ends the program, as documented. It runs on the goroutine that decides o's outcome
// (Release, Change or Cancel of any client or callback, or this one at
// once if already decided).
func (r *Recorder) watch(s *bulkhead.Semaphore, client int, o *openAcq, seed uint64, limits []int) {
	rng := rand.New(rand.NewPCG(seed, 13))
	action := rng.IntN(4)
	if action == 3 && len(limits) == 0 {
		action = 0
	}
	o.cbOwns = action != 1 // 1: keep the permit for the client
	panics := len(limits) == 0 && rng.IntN(3) == 0
	other := int(rng.Int64N(max(r.ids.Load(), 1))) + 1
	limit := 0
	if len(limits) > 0 {
		limit = limits[rng.IntN(len(limits))]
	}
	cb := callbackClient(client)
	r.callbacks.Add(1)
	o.a.OnDone(func(err error) {
		defer r.callbacks.Done()
		out := r.record(cb, Input{Kind: Read, ID: o.id}, func() Output { return Output{Outcome: outcomeOf(o.a)} })
		if (err == nil) != (out.Outcome == Granted) {
			panic(fmt.Sprintf("callback of #%d got %v but Err says %s", o.id, err, out.Outcome))
		}
		if err != nil {
			return // nothing held; Cancel's callbacks never panic
		}
		switch action {
		case 0:
			r.record(cb, Input{Kind: Release}, func() Output { s.FinishCall(); return Output{} })
		case 1:
		case 2:
			if v, ok := r.open.Load(other); ok && other != o.id {
				r.record(cb, Input{Kind: Cancel, ID: other}, func() Output { return Output{OK: v.(*bulkhead.Acquisition).Cancel()} })
			}
			r.record(cb, Input{Kind: Release}, func() Output { s.ReleasePermission(); return Output{} })
		case 3:
			r.record(cb, Input{Kind: Change, N: limit}, func() Output {
				cfg := s.Config()
				cfg.MaxConcurrentCalls = limit
				if err := s.ChangeConfig(cfg); err != nil {
					panic(err)
				}
				return Output{}
			})
			r.record(cb, Input{Kind: Release}, func() Output { s.FinishCall(); return Output{} })
		}
		if panics {
			panic(errCallbackPanic)
		}
	})
}
