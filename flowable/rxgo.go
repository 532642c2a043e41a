package flowable

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/reactivex/rxgo/v2"
)

// FromObservable returns a Publisher of the items of obs. Each subscription
// observes obs afresh (obs.Observe, with opts and a context of its own) on
// one goroutine that pulls as many items from rxgo's channel as were
// requested and signals them serially. An item holding an error ends the
// subscription with OnError; so does an item whose value is not a T (the
// error names both types; a nil value becomes T's zero value). Cancel
// cancels the context, which ends the rxgo pipeline, and the goroutine
// returns without reading further (a Cancel made inside OnNext is seen
// before the next item is read); a Request after Cancel does nothing, so a
// Request(n <= 0) then is not signalled (rule 3.6).
//
// The goroutine is started by the first Request, so a subscription that
// never requests (for example one still waiting for a bulkhead permit)
// costs none. A subscriber that leaves OnNext with runtime.Goexit ends that
// goroutine; the subscription then ends with an OnError naming the Goexit
// (so Bulkhead gives its permit back). A panic in OnNext is not recovered.
func FromObservable[T any](obs rxgo.Observable, opts ...rxgo.Option) Publisher[T] {
	if obs == nil {
		panic("flowable: FromObservable called with a nil Observable")
	}
	return publisherFunc[T](func(s Subscriber[T]) {
		ctx, cancel := context.WithCancel(context.Background())
		p := &observablePull[T]{
			down: s, obs: obs, opts: opts,
			ctx: ctx, cancel: cancel, wake: make(chan struct{}, 1), badWake: make(chan struct{}, 1),
		}
		s.OnSubscribe(p)
	})
}

// observablePull is the Subscription of FromObservable. Only its pump
// goroutine signals the subscriber, so signals are serial; Request and
// Cancel only touch atomics and the wake channel.
type observablePull[T any] struct {
	down   Subscriber[T]
	obs    rxgo.Observable
	opts   []rxgo.Option
	ctx    context.Context
	cancel context.CancelFunc

	requested atomic.Int64
	bad       atomic.Int64
	started   atomic.Bool
	wake      chan struct{} // a token after each Request
	// badWake gets a token after a Request(n <= 0), so that the pump sees
	// it while it waits for an item too (a slow or silent source may never
	// send the next one); positive Requests do not disturb that wait.
	badWake chan struct{}
}

// Request adds n to the demand and starts the pump on the first call. After
// Cancel (or the end of the subscription) it does nothing (rule 3.6): a
// Request(n <= 0) is not signalled then.
func (p *observablePull[T]) Request(n int64) {
	if p.ctx.Err() != nil {
		return
	}
	if n <= 0 {
		badRequest(&p.bad, n)
		select {
		case p.badWake <- struct{}{}:
		default:
		}
	} else {
		addDemand(&p.requested, n)
	}
	select {
	case p.wake <- struct{}{}:
	default:
	}
	if p.ctx.Err() == nil && p.started.CompareAndSwap(false, true) {
		go p.pump()
	}
}

func (p *observablePull[T]) Cancel() { p.cancel() }

// pump runs on its own goroutine: it waits for demand, receives one item per
// unit of demand and signals it, until the channel closes, an error item
// arrives, a Request(n <= 0) comes (also while it waits for an item) or the
// context is cancelled. It checks the context before each wait, so a Cancel
// made inside OnNext ends it before it reads another item (its select would
// pick a ready item or the cancellation at random).
//
// If the subscriber leaves OnNext with runtime.Goexit, which ends this
// goroutine and no Request frame of the subscriber's, the pump ends the
// subscription with OnError(errSubscriberGoexit) as it unwinds, so that an
// operator downstream (Bulkhead) learns that the call ended. A panic in
// OnNext goes on (it ends the program, as any panic in a goroutine does).
func (p *observablePull[T]) pump() {
	inNext := false
	defer func() {
		cancelled := p.ctx.Err() != nil
		p.cancel()
		if !inNext {
			return
		}
		if r := recover(); r != nil {
			panic(r) // OnNext panicked: it goes on
		}
		if !cancelled { // no signal after Cancel (rule 3.6)
			p.down.OnError(errSubscriberGoexit) // OnNext called runtime.Goexit
		}
	}()
	ch := p.obs.Observe(append(p.opts[:len(p.opts):len(p.opts)], rxgo.WithContext(p.ctx))...)
	for {
		if p.ctx.Err() != nil {
			return // cancelled, possibly inside the OnNext just signalled
		}
		if b := p.bad.Load(); b != 0 {
			p.down.OnError(badErr(b))
			return
		}
		if p.requested.Load() == 0 {
			select {
			case <-p.wake:
				continue
			case <-p.ctx.Done():
				return
			}
		}
		select {
		case <-p.ctx.Done():
			return
		case <-p.badWake:
			continue // signalled at the top of the loop
		case item, ok := <-ch:
			if !ok {
				p.down.OnComplete()
				return
			}
			if item.E != nil {
				p.down.OnError(item.E)
				return
			}
			v, isT := item.V.(T)
			if !isT && item.V != nil {
				p.down.OnError(fmt.Errorf("flowable: FromObservable: item of type %T is not a %T", item.V, *new(T)))
				return
			}
			p.take()
			inNext = true
			p.down.OnNext(v)
			inNext = false
		}
	}
}

// take consumes one unit of demand; unbounded demand is never decremented.
func (p *observablePull[T]) take() {
	for {
		r := p.requested.Load()
		if r == Unbounded || p.requested.CompareAndSwap(r, r-1) {
			return
		}
	}
}

// ToObservable returns an rxgo Observable of the elements of p. Each
// Observe subscribes to p afresh from rxgo's producer goroutine and feeds
// rxgo's channel from that goroutine only (the Observe options, such as
// rxgo.WithBufferedChannel and rxgo.WithContext, apply). Demand follows the
// channel: toObservablePrefetch elements are requested ahead and
// replenished as they are sent, so a slow consumer slows p down, while the
// subscriber itself never blocks the goroutine p signals on. An OnError
// becomes an error item. When the Observe context ends, the subscription is
// cancelled and the channel closed.
func ToObservable[T any](p Publisher[T], opts ...rxgo.Option) rxgo.Observable {
	if p == nil {
		panic("flowable: ToObservable called with a nil Publisher")
	}
	produce := func(ctx context.Context, next chan<- rxgo.Item) {
		c := &channelSubscriber[T]{signal: make(chan struct{}, 1)}
		p.Subscribe(c)
		c.forward(ctx, next)
	}
	return rxgo.Defer([]rxgo.Producer{produce}, opts...)
}

// toObservablePrefetch is how many elements ToObservable requests ahead.
const toObservablePrefetch = 64

// channelSubscriber queues the signals of p (at most toObservablePrefetch
// elements, since it never requests more than that ahead) and forward sends
// them into rxgo's channel on the producer goroutine.
type channelSubscriber[T any] struct {
	mu     sync.Mutex
	sub    Subscription
	queue  []T
	ended  bool
	err    error
	signal chan struct{} // a token after each signal
}

func (c *channelSubscriber[T]) OnSubscribe(s Subscription) {
	c.mu.Lock()
	dup := c.sub != nil
	if !dup {
		c.sub = s
	}
	c.mu.Unlock()
	if dup {
		s.Cancel() // rule 2.5
		return
	}
	s.Request(toObservablePrefetch)
}

func (c *channelSubscriber[T]) OnNext(v T) {
	c.mu.Lock()
	c.queue = append(c.queue, v)
	c.mu.Unlock()
	c.notify()
}

func (c *channelSubscriber[T]) OnError(err error) {
	c.mu.Lock()
	c.ended, c.err = true, err
	c.mu.Unlock()
	c.notify()
}

func (c *channelSubscriber[T]) OnComplete() {
	c.mu.Lock()
	c.ended = true
	c.mu.Unlock()
	c.notify()
}

func (c *channelSubscriber[T]) notify() {
	select {
	case c.signal <- struct{}{}:
	default:
	}
}

// forward runs on rxgo's producer goroutine until p terminates or ctx ends.
func (c *channelSubscriber[T]) forward(ctx context.Context, next chan<- rxgo.Item) {
	var batch []T
	sent := 0
	for {
		c.mu.Lock()
		batch = append(batch[:0], c.queue...)
		c.queue = c.queue[:0]
		ended, err, sub := c.ended, c.err, c.sub
		c.mu.Unlock()
		for _, v := range batch {
			if !rxgo.Of(v).SendContext(ctx, next) {
				sub.Cancel()
				return
			}
			if sent++; sent == toObservablePrefetch/2 {
				sent = 0
				sub.Request(toObservablePrefetch / 2)
			}
		}
		if len(batch) > 0 {
			continue // more may have arrived while sending
		}
		if ended {
			if err != nil {
				rxgo.Error(err).SendContext(ctx, next)
			}
			return
		}
		select {
		case <-c.signal:
		case <-ctx.Done():
			if sub != nil {
				sub.Cancel()
			}
			return
		}
	}
}
