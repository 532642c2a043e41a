package linearizability

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anishathalye/porcupine"

	bulkhead "github.com/rxbulkhead/bulkhead"
)

// Recorder records the operations of several clients on one Semaphore.
// Call and return times come from one atomic counter, so they respect real
// time order across goroutines.
//
// With Callbacks set, clients also register OnDone callbacks that re-enter
// the bulkhead from whichever goroutine decides the outcome: a granted one
// reads its own outcome (which must be visible in the callback), gives the
// permit back, cancels another client's acquisition, changes the config,
// or blocks for a while first; a rejected or withdrawn one reads its
// outcome and may re-enter too (TryAcquirePermission, Cancel, Metrics,
// ChangeConfig) or block. With Panics set, some panic at the end. What a
// callback does is recorded as operations of a client of its own
// (callbackClient), inside the interval of the operation that ran it, or
// on their own when a fresh goroutine runs it (a grant of several waiters,
// the delivery bound, the sweep relay's hand-off).
//
// With Advances set, clients also advance the Clock, which runs the
// Semaphore's expiry sweeps (see Clock).
//
// With Weights set, every TryAcquirePermission and AcquirePermissionAsync
// (of a client or a callback) is a call of a weight picked from Weights,
// through Semaphore.Call(k) (for weight 1, the Semaphore's own method or
// Call(1), at random), and a release gives back the weight of the call it
// ends.
type Recorder struct {
	// Config is the Semaphore's config at the start of the history.
	Config bulkhead.Config
	// Limits and Waits are the values Change may set for
	// MaxConcurrentCalls and MaxWaitDuration; with both empty, clients
	// never change the config. A Change always sets both fields (the one
	// without values to Config's), never reading the config first, so
	// that two changing clients cannot undo each other's change.
	Limits []int
	Waits  []time.Duration
	// Clock is the Semaphore's clock; with Advances set, clients advance
	// it, by one of them at a time.
	Clock    *Clock
	Advances []time.Duration
	// Weights are the weights of the calls clients make (empty: 1 only,
	// through the Semaphore's own methods).
	Weights []int
	// NoMetrics leaves Metrics out of the operations a Client runs.
	NoMetrics bool
	// Callbacks makes clients register re-entrant OnDone callbacks;
	// Panics makes some of them panic, Block some of them block a while.
	Callbacks, Panics, Block bool

	clock    atomic.Int64
	ids      atomic.Int64
	mu       sync.Mutex
	ops      []porcupine.Operation
	progress chan struct{} // closed (and replaced) when an operation is recorded

	open      sync.Map       // acquisition ID -> *bulkhead.Acquisition not yet collected
	idOf      sync.Map       // *bulkhead.Acquisition -> ID, of every queued acquisition
	heavy     sync.Map       // ID -> *bulkhead.Acquisition, of the Acquires that returned one rejected as too heavy
	deciding  int64          // Call of the decision under way, guarded by the Semaphore's lock
	callbacks sync.WaitGroup // callbacks registered and not finished
	started   atomic.Int64   // callbacks started
	guards    sync.Map       // goroutine ID -> *[]Kind: the recorded operations running on it, innermost last
	stats     Stats
}

// Stats counts what the callbacks of a history did.
type Stats struct {
	Panics   atomic.Int64 // panics of callbacks that reached an operation
	Blocked  atomic.Int64 // callbacks that blocked
	Overtook atomic.Int64 // blocked callbacks that another callback started after, before they returned
	Fresh    atomic.Int64 // callbacks that ran on a goroutine no operation was running on
}

// Stats returns the callback counters.
func (r *Recorder) Stats() *Stats { return &r.stats }

// callbackClient is the client number under which the operations of a
// callback registered by client c are recorded.
func callbackClient(c int) int { return 1000 + c }

// errCallbackPanic is what a panicking callback panics with.
var errCallbackPanic = errors.New("linearizability: callback panics on purpose")

// goroutineID parses the running goroutine's number from its stack header
// (test-only: it costs a microsecond or two).
func goroutineID() uint64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	b = bytes.TrimPrefix(b, []byte("goroutine "))
	if i := bytes.IndexByte(b, ' '); i > 0 {
		b = b[:i]
	}
	id, _ := strconv.ParseUint(string(b), 10, 64)
	return id
}

// guard runs f as part of an operation of kind k on this goroutine: a
// callback that f runs (a grant, a sweep) and that panics with
// errCallbackPanic ends f, and the panic stops here. guard reports whether
// f returned.
func (r *Recorder) guard(k Kind, f func()) (returned bool) {
	g := goroutineID()
	v, _ := r.guards.LoadOrStore(g, new([]Kind))
	stack := v.(*[]Kind)
	*stack = append(*stack, k)
	defer func() {
		*stack = (*stack)[:len(*stack)-1]
		if len(*stack) == 0 {
			r.guards.Delete(g)
		}
		if !returned {
			if p := recover(); p != errCallbackPanic {
				panic(p)
			}
			r.stats.Panics.Add(1)
		}
	}()
	f()
	return true
}

// mayPanic reports whether a callback running on this goroutine may panic:
// only if an operation runs on it whose guard recovers the panic and whose
// output the panic does not falsify (Release, Change and Watch have none;
// an Advance's Ticks and Expires are recorded before any callback runs).
// A callback on any other goroutine (a fresh one of the Semaphore's, the
// sweep relay's watchdog) must not panic: that would end the program, as
// documented.
func (r *Recorder) mayPanic() bool {
	v, ok := r.guards.Load(goroutineID())
	if !ok {
		return false
	}
	stack := *v.(*[]Kind)
	switch stack[len(stack)-1] {
	case Release, Change, Watch, Tick:
		return true
	}
	return false
}

// onGuardedGoroutine reports whether an operation runs on this goroutine.
func (r *Recorder) onGuardedGoroutine() bool {
	_, ok := r.guards.Load(goroutineID())
	return ok
}

// record runs f as one operation of client and records it. A panic of a
// callback that f ran (errCallbackPanic) ends f: the operation took effect
// before its callbacks ran, and out is the zero Output, which is what the
// operations a panicking callback may run inside return (see mayPanic).
func (r *Recorder) record(client int, in Input, f func() Output) (out Output) {
	call := r.clock.Add(1)
	// Yielding inside the interval widens it (it still contains the
	// operation), so that more operations overlap and their order matters.
	runtime.Gosched()
	r.guard(in.Kind, func() { out = f() })
	runtime.Gosched()
	r.add(client, in, out, call)
	return out
}

// add records an operation of client that was called at call and returns
// now.
func (r *Recorder) add(client int, in Input, out Output, call int64) {
	ret := r.clock.Add(1)
	r.mu.Lock()
	r.ops = append(r.ops, porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: ret})
	if r.progress != nil {
		close(r.progress)
		r.progress = nil
	}
	r.mu.Unlock()
}

// decidedClient is the client number of the grants and expiries the
// Semaphore decides (Grant, Expire): they are not made by any one client.
const decidedClient = 999

// decided records the grant or expiry of a, decided since call (see
// Clock.Hooks). It runs under the Semaphore's lock, maybe before the
// client that queued a knows a: its ID is looked up in History.
func (r *Recorder) decided(a *bulkhead.Acquisition, call int64) {
	k := Grant
	switch err := a.Err(); {
	case errors.Is(err, bulkhead.ErrTooHeavy):
		k = Reject
	case err != nil:
		k = Expire
	}
	ret := r.clock.Add(1)
	r.mu.Lock()
	r.ops = append(r.ops, porcupine.Operation{ClientId: decidedClient, Input: Input{Kind: k}, Call: call, Output: Output{}, Return: ret, Metadata: a})
	if r.progress != nil {
		close(r.progress)
		r.progress = nil
	}
	r.mu.Unlock()
}

// nextOperation returns a channel closed when the next operation is
// recorded.
func (r *Recorder) nextOperation() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.progress == nil {
		r.progress = make(chan struct{})
	}
	return r.progress
}

// Wait waits for every callback registered by the clients to finish (a
// callback may run on a goroutine of its own after the operation that
// decided its outcome returned).
func (r *Recorder) Wait() { r.callbacks.Wait() }

// History returns the operations recorded so far. Call it once every
// client is done: the grants and expiries get the IDs of their
// acquisitions here.
func (r *Recorder) History() []porcupine.Operation {
	r.mu.Lock()
	defer r.mu.Unlock()
	h := append([]porcupine.Operation(nil), r.ops...)
	// An Acquire whose acquisition a Change rejected as too heavy (Reject)
	// queued it, even if Err said too heavy by the time it returned.
	rejected := map[*bulkhead.Acquisition]bool{}
	for _, op := range h {
		if a, ok := op.Metadata.(*bulkhead.Acquisition); ok && op.Input.(Input).Kind == Reject {
			rejected[a] = true
		}
	}
	for i, op := range h {
		if in := op.Input.(Input); in.Kind == Acquire && op.Output.(Output).Outcome == TooHeavy {
			if a, ok := r.heavy.Load(in.ID); ok && rejected[a.(*bulkhead.Acquisition)] {
				h[i].Output = Output{Outcome: Queued}
			}
		}
		if a, ok := op.Metadata.(*bulkhead.Acquisition); ok {
			id, known := r.idOf.Load(a)
			if !known {
				panic(fmt.Sprintf("linearizability: a %v decided an acquisition no client queued", op.Input.(Input).Kind))
			}
			h[i].Input = Input{Kind: op.Input.(Input).Kind, ID: id.(int)}
			h[i].Metadata = nil
		}
	}
	return h
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
	case errors.As(err, &fe) && fe.Reason == bulkhead.WaitTimeout:
		return Expired
	case errors.As(err, &fe) && fe.Reason == bulkhead.NoWait:
		return RejectedNoWait
	case errors.As(err, &fe) && fe.Reason == bulkhead.QueueFull:
		return RejectedQueueFull
	case errors.Is(err, bulkhead.ErrTooHeavy):
		return TooHeavy
	}
	return Outcome(255) // unknown: no model step accepts it
}

// changes reports whether clients change the config.
func (r *Recorder) changes() bool { return len(r.Limits) > 0 || len(r.Waits) > 0 }

// change records a ChangeConfig, to values picked with rng, as an
// operation of client.
func (r *Recorder) change(s *bulkhead.Semaphore, client int, rng *rand.Rand) {
	cfg := r.Config
	if len(r.Limits) > 0 {
		cfg.MaxConcurrentCalls = r.Limits[rng.IntN(len(r.Limits))]
	}
	if len(r.Waits) > 0 {
		cfg.MaxWaitDuration = r.Waits[rng.IntN(len(r.Waits))]
	}
	r.record(client, Input{Kind: Change, N: cfg.MaxConcurrentCalls, Wait: cfg.MaxWaitDuration}, func() Output {
		if err := s.ChangeConfig(cfg); err != nil {
			panic(err)
		}
		return Output{}
	})
}

// weight picks the weight of a call (1 without Weights, drawing nothing
// from rng, so that the unweighted histories stay as they were).
func (r *Recorder) weight(rng *rand.Rand) int {
	if len(r.Weights) == 0 {
		return 1
	}
	return r.Weights[rng.IntN(len(r.Weights))]
}

// call returns the SemaphoreCall of weight k, or nil if the Semaphore's own
// methods should make a call of weight 1: always without Weights, at
// random with them.
func (r *Recorder) call(s *bulkhead.Semaphore, k int, rng *rand.Rand) *bulkhead.SemaphoreCall {
	if k == 1 && (len(r.Weights) == 0 || rng.IntN(2) == 0) {
		return nil
	}
	c := s.Call(k)
	return &c
}

// try records a TryAcquirePermission of weight k as an operation of client.
func (r *Recorder) try(s *bulkhead.Semaphore, client, k int, rng *rand.Rand) bool {
	c := r.call(s, k, rng)
	return r.record(client, Input{Kind: Try, Weight: k}, func() Output {
		if c != nil {
			return Output{OK: c.TryAcquirePermission()}
		}
		return Output{OK: s.TryAcquirePermission()}
	}).OK
}

// How a release gives its permits back.
const (
	finishCall = iota
	releasePermission
)

// release records the release of a call of weight k as an operation of
// client: FinishCall or ReleasePermission (how).
func (r *Recorder) release(s *bulkhead.Semaphore, client, k, how int, rng *rand.Rand) {
	c := r.call(s, k, rng)
	r.record(client, Input{Kind: Release, Weight: k}, func() Output {
		switch {
		case c != nil && how == finishCall:
			c.FinishCall()
		case c != nil:
			c.ReleasePermission()
		case how == finishCall:
			s.FinishCall()
		default:
			s.ReleasePermission()
		}
		return Output{}
	})
}

// Advance advances the clock by d as client: its steps and the sweeps they
// run are recorded (see Clock). A callback of a sweep that panics ends
// the clock's AdvanceTo; the panic stops here and the advance goes on.
func (r *Recorder) Advance(client int, d time.Duration) {
	target := r.Clock.Since() + d
	for !r.guard(Tick, func() { r.Clock.AdvanceTo(client, target) }) {
	}
}

// Client runs ops random operations on s as client number id, recording
// them in r; then it calls beforeCleanup (if not nil), gives back every
// permit and withdraws every acquisition it still has (also recorded).
func (r *Recorder) Client(s *bulkhead.Semaphore, id, ops int, rng *rand.Rand, beforeCleanup func()) {
	var held []int // the weights of the calls the client holds
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
				r.record(id, Input{Kind: Watch, ID: o.id}, func() Output { r.watch(s, id, o, seed); return Output{} })
			}
		case op < 15:
			if k := r.weight(rng); r.try(s, id, k, rng) {
				held = append(held, k)
			}
		case op < 40:
			n := int(r.ids.Add(1))
			k := r.weight(rng)
			c := r.call(s, k, rng)
			var a *bulkhead.Acquisition
			out := r.record(id, Input{Kind: Acquire, ID: n, Weight: k}, func() Output {
				if c != nil {
					a = c.AcquirePermissionAsync()
				} else {
					a = s.AcquirePermissionAsync()
				}
				switch o := outcomeOf(a); {
				case a == bulkhead.GrantedAcquisition():
					return Output{Outcome: Granted}
				case o == RejectedNoWait || o == RejectedQueueFull || o == TooHeavy:
					return Output{Outcome: o}
				}
				return Output{Outcome: Queued}
			})
			switch out.Outcome {
			case Granted:
				held = append(held, k)
			case TooHeavy:
				// Rejected at once, or queued and rejected by a Change
				// before it returned: History tells which.
				r.heavy.Store(n, a)
				r.idOf.Store(a, n)
			case Queued:
				open = append(open, &openAcq{id: n, a: a, weight: k})
				r.open.Store(n, a)
				r.idOf.Store(a, n)
			}
		case op < 50 && len(open) > 0:
			k := rng.IntN(len(open))
			if r.cancel(id, open[k]) {
				held = append(held, open[k].weight)
			}
			take(k)
		case op < 63 && len(open) > 0:
			k := rng.IntN(len(open))
			switch r.record(id, Input{Kind: Read, ID: open[k].id}, func() Output { return Output{Outcome: outcomeOf(open[k].a)} }).Outcome {
			case Granted:
				if !open[k].cbOwns {
					held = append(held, open[k].weight)
				}
				take(k)
			case Evicted, Cancelled, Expired, TooHeavy: // Cancelled: by another client's callback
				take(k)
			}
		case op < 80 && len(held) > 0:
			k := len(held) - 1
			if len(r.Weights) > 0 { // (without weights every held call is alike: no draw)
				k = rng.IntN(len(held))
			}
			w := held[k]
			held = append(held[:k], held[k+1:]...)
			r.release(s, id, w, rng.IntN(2), rng)
		case op >= 80 && op < 85 && r.changes():
			r.change(s, id, rng)
		case op >= 85 && op < 95 && len(r.Advances) > 0:
			r.Advance(id, r.Advances[rng.IntN(len(r.Advances))])
		case !r.NoMetrics:
			r.record(id, Input{Kind: Metrics}, func() Output { return Output{Metrics: s.Metrics()} })
		}
	}
	if beforeCleanup != nil {
		beforeCleanup()
	}
	for _, o := range open {
		if r.cancel(id, o) {
			held = append(held, o.weight)
		}
		r.open.Delete(o.id)
	}
	for _, k := range held {
		r.release(s, id, k, finishCall, rng)
	}
}

type openAcq struct {
	id      int
	a       *bulkhead.Acquisition
	weight  int
	watched bool // a callback is registered
	cbOwns  bool // the callback gives a grant back itself
}

// cancel withdraws o, or, if its outcome was decided first, awaits it; it
// reports whether the client got o's permits (granted, and its callback
// does not give them back).
func (r *Recorder) cancel(client int, o *openAcq) bool {
	if r.record(client, Input{Kind: Cancel, ID: o.id}, func() Output { return Output{OK: o.a.Cancel()} }).OK {
		return false
	}
	out := r.record(client, Input{Kind: Await, ID: o.id}, func() Output {
		<-o.a.Done()
		return Output{Outcome: outcomeOf(o.a)}
	})
	return out.Outcome == Granted && !o.cbOwns
}

// Callback actions, chosen by the registering client.
const (
	cbFinish      = iota // granted: FinishCall
	cbKeep               // granted: keep the permit for the client
	cbCancelOther        // cancel another open acquisition; granted: then ReleasePermission
	cbChange             // ChangeConfig; granted: then FinishCall
	cbTry                // TryAcquirePermission (and give it back); granted: then FinishCall
	cbActions
)

// How long a blocking callback blocks at most, on the real clock: past
// the sweep relay's 1 ms stall, so that the relay's watchdog hands the
// callbacks after it to another goroutine.
const blockBound = 5 * time.Millisecond

// watch registers a callback on o for client and sets o.cbOwns if the
// callback gives a grant back itself. What the callback does is chosen
// from seed: it reads its own outcome (always), may block a while, then
// does one of the cb actions, and, with Panics, now and then panics at the
// end (where mayPanic allows). It runs on the goroutine that decides o's
// outcome (Release, Change, Cancel, an Acquire that evicts, an Advance
// that sweeps, of any client or callback; this one at once if already
// decided; or a fresh goroutine of the Semaphore's).
func (r *Recorder) watch(s *bulkhead.Semaphore, client int, o *openAcq, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 13))
	action := rng.IntN(cbActions)
	if action == cbChange && !r.changes() {
		action = cbFinish
	}
	o.cbOwns = action != cbKeep
	panics := r.Panics && rng.IntN(3) == 0
	blocks := r.Block && rng.IntN(4) == 0
	untilOvertaken := rng.IntN(2) == 0
	other := int(rng.Int64N(max(r.ids.Load(), 1))) + 1
	cb := callbackClient(client)
	changeRng := rand.New(rand.NewPCG(seed, 17))
	callRng := rand.New(rand.NewPCG(seed, 19)) // the weights and methods of its calls
	tryWeight := r.weight(callRng)
	r.callbacks.Add(1)
	o.a.OnDone(func(err error) {
		defer r.callbacks.Done()
		startedAs := r.started.Add(1)
		if !r.onGuardedGoroutine() {
			r.stats.Fresh.Add(1)
		}
		out := r.record(cb, Input{Kind: Read, ID: o.id}, func() Output { return Output{Outcome: outcomeOf(o.a)} })
		if (err == nil) != (out.Outcome == Granted) {
			panic(fmt.Sprintf("callback of #%d got %v but Err says %s", o.id, err, out.Outcome))
		}
		if blocks {
			r.block(startedAs, untilOvertaken)
		}
		granted := err == nil
		switch action {
		case cbKeep:
		case cbCancelOther:
			if v, ok := r.open.Load(other); ok && other != o.id {
				r.record(cb, Input{Kind: Cancel, ID: other}, func() Output { return Output{OK: v.(*bulkhead.Acquisition).Cancel()} })
			}
			if granted {
				r.release(s, cb, o.weight, releasePermission, callRng)
			}
		case cbChange:
			r.change(s, cb, changeRng)
			if granted {
				r.release(s, cb, o.weight, finishCall, callRng)
			}
		case cbTry:
			if r.try(s, cb, tryWeight, callRng) {
				r.release(s, cb, tryWeight, finishCall, callRng)
			}
			fallthrough
		default: // cbFinish
			if granted {
				r.release(s, cb, o.weight, finishCall, callRng)
			}
		}
		if panics && r.mayPanic() {
			panic(errCallbackPanic)
		}
	})
}

// block blocks a callback that was the startedAs-th to start: until a
// callback starts after it (untilOvertaken: in a sweep whose relay has
// more callbacks to run, the relay's watchdog must hand them to another
// goroutine), or else until three more operations are recorded, and never
// longer than blockBound.
func (r *Recorder) block(startedAs int64, untilOvertaken bool) {
	r.stats.Blocked.Add(1)
	bound := time.NewTimer(blockBound)
	defer bound.Stop()
	for seen := 0; ; seen++ {
		if r.started.Load() > startedAs {
			r.stats.Overtook.Add(1)
			return
		}
		if !untilOvertaken && seen == 3 {
			return
		}
		select {
		case <-r.nextOperation():
		case <-bound.C:
			return
		}
	}
}
