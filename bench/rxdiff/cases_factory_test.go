package rxdiff_test

import (
	"context"
	"time"

	"github.com/reactivex/rxgo/v2"
)

// The factories of rxgo (factory_test.go), the connectable Observables
// (factory_connectable_test.go) and the options
// (observable_operator_option_test.go). A factory that combines
// Observables (Amb, CombineLatest, Concat, Merge) gets wrapped sources of
// each kind; one that makes a source is wrapped itself (Factory).
var factoryCases = []Case{
	{Group: "factory", Name: "Amb", Tests: "Amb1, Amb2", Early: true, Run: func(e *env) {
		e.Drain(rxgo.Amb([]rxgo.Observable{e.Src(1, 2, 3), e.Wrap(rxgo.Never())}, rxgo.WithContext(e.Ctx())))
	}},
	{Group: "factory", Name: "CombineLatest", Tests: "CombineLatest, CombineLatest_Empty", Run: func(e *env) {
		// rxgo v2.5.0's CombineLatest counts a source's first item before it
		// stores it, unlocked (factory.go), so another source's handler can
		// see the count complete and call sum with that slot still nil, plain
		// or wrapped: an extra, partial emission some of the time. The last
		// emission always has every slot, so only it is compared.
		sum := func(vs ...any) any {
			n := 0
			for _, v := range vs {
				if v, ok := v.(int); ok {
					n += v
				}
			}
			return n
		}
		e.Drain(rxgo.CombineLatest(sum, []rxgo.Observable{e.Src(1), e.Src(10)}, rxgo.WithContext(e.Ctx())).Last())
		e.Drain(rxgo.CombineLatest(sum, []rxgo.Observable{e.Src(1), e.Src()}, rxgo.WithContext(e.Ctx())).Last())
	}},
	{Group: "factory", Name: "CombineLatest, error", Racy: true, Tests: "CombineLatest_Error", Early: true, Run: func(e *env) {
		e.Drain(rxgo.CombineLatest(func(vs ...any) any { return len(vs) }, []rxgo.Observable{e.Src(1, 2), e.Src(errFoo)}, rxgo.WithContext(e.Ctx())))
	}},
	{Group: "factory", Name: "Concat", Tests: "Concat_SingleObservable, _TwoObservables, _MoreThanTwoObservables, _EmptyObservables, _OneEmptyObservable", Run: func(e *env) {
		e.Drain(rxgo.Concat([]rxgo.Observable{e.Src(1, 2)}, e.Opts()...))
		e.Drain(rxgo.Concat([]rxgo.Observable{e.Src(1, 2), e.Src(3), e.Src(4, 5)}, e.Opts()...))
		e.Drain(rxgo.Concat([]rxgo.Observable{e.Src(), e.Src()}, e.Opts()...))
		e.Drain(rxgo.Concat([]rxgo.Observable{e.Src(), e.Src(1)}, e.Opts()...))
	}},
	{Group: "factory", Name: "Merge", Tests: "Merge, Merge_Error", Unordered: true, Run: func(e *env) {
		e.Drain(rxgo.Merge([]rxgo.Observable{e.Src(1, 2), e.Src(3, 4)}, rxgo.WithContext(e.Ctx())))
		e.Drain(rxgo.Merge([]rxgo.Observable{e.Src(1, 2), e.Src(errFoo)}, rxgo.WithContext(e.Ctx())))
	}},
	{Group: "factory", Name: "Create", Tests: "Create, Create_SingleDup", Factory: true, Run: func(e *env) {
		e.Drain(e.Wrap(rxgo.Create([]rxgo.Producer{producer([]any{1, 2, errFoo})}, rxgo.WithContext(e.Ctx()))))
	}},
	{Group: "factory", Name: "Create, cancelled by a producer", Tests: "Create_ContextCancelled", Factory: true, Run: func(e *env) {
		ctx, cancel := context.WithCancel(e.Ctx())
		e.Wait(e.Wrap(rxgo.Create([]rxgo.Producer{
			func(context.Context, chan<- rxgo.Item) { cancel() },
			func(ctx context.Context, _ chan<- rxgo.Item) { <-ctx.Done(); e.Log("producer ended") },
		}, rxgo.WithContext(ctx))).Run())
	}},
	{Group: "factory", Name: "Defer", Tests: "Defer, Defer_Multiple, Defer_SingleDup, Defer_ComposedDup, Defer_ComposedDup_EagerObservation, Defer_Error", Factory: true, Run: func(e *env) {
		obs := e.Wrap(rxgo.Defer([]rxgo.Producer{producer([]any{1, 2}), producer([]any{3, errFoo})}, rxgo.WithContext(e.Ctx())))
		e.Drain(obs)
		e.Drain(obs.Map(inc))
		e.Drain(obs.Map(inc, rxgo.WithObservationStrategy(rxgo.Eager)))
	}},
	{Group: "factory", Name: "Defer, cancelled by a producer", Tests: "Defer_ContextCancelled", Factory: true, Run: func(e *env) {
		ctx, cancel := context.WithCancel(e.Ctx())
		e.Wait(e.Wrap(rxgo.Defer([]rxgo.Producer{
			func(context.Context, chan<- rxgo.Item) { cancel() },
			func(ctx context.Context, _ chan<- rxgo.Item) { <-ctx.Done(); e.Log("producer ended") },
		}, rxgo.WithContext(ctx))).Run())
	}},
	{Group: "factory", Name: "Empty", Tests: "Empty", Factory: true, Run: func(e *env) {
		e.Drain(e.Wrap(rxgo.Empty()))
	}},
	{Group: "factory", Name: "FromChannel", Tests: "FromChannel, FromChannel_SimpleCapacity, FromChannel_ComposedCapacity", Factory: true, Run: func(e *env) {
		ch := make(chan rxgo.Item, 5)
		ch <- rxgo.Of(1)
		close(ch)
		obs := e.Wrap(rxgo.FromChannel(ch))
		out := obs.Observe()
		e.Log("cap %d", cap(out))
		for it := range out {
			e.Log("%s", Item(it))
		}
		ch = make(chan rxgo.Item, 10)
		close(ch)
		out = e.Wrap(rxgo.FromChannel(ch)).Map(inc, rxgo.WithBufferedChannel(11)).Observe(e.Opts()...)
		e.Log("cap %d", cap(out))
		for range out {
		}
	}},
	{Group: "factory", Name: "FromEventSource", Tests: "FromEventSource_ObservationAfterAllSent, FromEventSource_Drop", Factory: true, Run: func(e *env) {
		ch := make(chan rxgo.Item, 3)
		for i := range 3 {
			ch <- rxgo.Of(i)
		}
		close(ch)
		obs := e.Wrap(rxgo.FromEventSource(ch, rxgo.WithBackPressureStrategy(rxgo.Drop)))
		time.Sleep(time.Second) // the bubble's clock: the events are sent before anyone observes
		e.Drain(obs)
	}},
	{Group: "factory", Name: "Interval", Tests: "Take_Interval", Factory: true, Early: true, Run: func(e *env) {
		e.Drain(e.Wrap(rxgo.Interval(second, rxgo.WithContext(e.Ctx()))).Take(3))
	}},
	{Group: "factory", Name: "Just", Tests: "Just, Just_CustomStructure, Just_Channel, Just_SimpleCapacity, Just_ComposedCapacity, JustItem", Factory: true, Run: func(e *env) {
		type point struct{ x, y int }
		e.Drain(e.Wrap(rxgo.Just(1, []int{2, 3}, point{4, 5})()))
		ch := make(chan int, 2)
		ch <- 6
		close(ch)
		e.Drain(e.Wrap(rxgo.Just(ch)()))
		e.Log("cap %d", cap(e.Wrap(rxgo.Just(1)(rxgo.WithBufferedChannel(5))).Observe()))
		e.Log("cap %d", cap(e.Wrap(rxgo.Just(1)(rxgo.WithBufferedChannel(5))).Map(inc, rxgo.WithBufferedChannel(11)).Observe()))
	}},
	{Group: "factory", Name: "Never", Tests: "(no rxgo test; the consumer gives up after a second)", Factory: true, Early: true, Run: func(e *env) {
		select {
		case it := <-e.Wrap(rxgo.Never()).Observe(e.Opts()...):
			e.Log("%s", Item(it))
		case <-time.After(time.Second):
			e.Log("nothing after a second")
		}
	}},
	{Group: "factory", Name: "Range", Tests: "Range, Range_NegativeCount, Range_MaximumExceeded", Factory: true, Run: func(e *env) {
		e.Drain(e.Wrap(rxgo.Range(5, 3)))
		e.Drain(e.Wrap(rxgo.Range(1, -5)))
		e.Drain(e.Wrap(rxgo.Range(1<<31, 1)))
	}},
	{Group: "factory", Name: "Start", Tests: "Start", Factory: true, Run: func(e *env) {
		e.Drain(e.Wrap(rxgo.Start([]rxgo.Supplier{
			func(context.Context) rxgo.Item { return rxgo.Of(1) },
			func(context.Context) rxgo.Item { return rxgo.Error(errFoo) },
		})))
	}},
	{Group: "factory", Name: "Thrown", Tests: "Thrown", Factory: true, Run: func(e *env) {
		e.Drain(e.Wrap(rxgo.Thrown(errFoo)))
	}},
	{Group: "factory", Name: "Timer", Tests: "Timer, Timer_Empty", Factory: true, Run: func(e *env) {
		e.Drain(e.Wrap(rxgo.Timer(second)))
		ctx, cancel := context.WithCancel(e.Ctx())
		cancel()
		e.Drain(e.Wrap(rxgo.Timer(second, rxgo.WithContext(ctx))))
	}},

	{Group: "connectable", Name: "Connect, FromChannel", Tests: "Connectable_IterableChannel_Single, _Composed, _Disposed, _WithoutConnect", Factory: true, Run: func(e *env) {
		connectable(e, func() rxgo.Observable {
			ch := make(chan rxgo.Item, 3)
			for i := range 3 {
				ch <- rxgo.Of(i)
			}
			close(ch)
			return rxgo.FromChannel(ch, rxgo.WithPublishStrategy())
		})
	}},
	{Group: "connectable", Name: "Connect, Create", Tests: "Connectable_IterableCreate_Single, _Composed, _Disposed, _WithoutConnect", Factory: true, Run: func(e *env) {
		connectable(e, func() rxgo.Observable {
			return rxgo.Create([]rxgo.Producer{producer([]any{0, 1, 2})}, rxgo.WithPublishStrategy(), rxgo.WithContext(e.Ctx()))
		})
	}},
	{Group: "connectable", Name: "Connect, Defer, Just, Range", Tests: "Connectable_IterableDefer_*, _IterableJust_*, _IterableRange_*, _IterableSlice_*", Factory: true, Run: func(e *env) {
		for _, src := range []rxgo.Observable{
			rxgo.Defer([]rxgo.Producer{producer([]any{0, 1})}, rxgo.WithPublishStrategy()),
			rxgo.Just(0, 1)(rxgo.WithPublishStrategy()),
			rxgo.Range(0, 2, rxgo.WithPublishStrategy()),
		} {
			obs := e.Wrap(src)
			ch := obs.Observe(e.Opts()...)
			ctx, cancel := context.WithCancel(e.Ctx())
			obs.Connect(ctx)
			for it := range ch {
				e.Log("%s", Item(it))
			}
			e.Log("end")
			cancel()
		}
	}},

	{Group: "option", Name: "WithErrorStrategy, propagated", Tests: "Option_WithOnErrorStrategy_Single, _Propagate", Run: func(e *env) {
		e.Drain(e.Src(1, errFoo, 2).Map(inc).Map(inc, rxgo.WithErrorStrategy(rxgo.ContinueOnError)))
	}},
	{Group: "option", Name: "WithBufferedChannel", Tests: "Option_SimpleCapacity, Option_ComposedCapacity", Run: func(e *env) {
		e.Log("cap %d", cap(e.Wrap(e.Raw(1).Map(inc, rxgo.WithBufferedChannel(5))).Observe(e.Opts()...)))
		e.Log("cap %d", cap(e.Src(1).Map(inc, rxgo.WithBufferedChannel(11)).Observe(e.Opts()...)))
	}},
	{Group: "option", Name: "WithContext, propagated", Tests: "Option_ContextPropagation", Run: func(e *env) {
		want := e.Ctx()
		e.Wait(e.Src(1).Map(func(ctx context.Context, v any) (any, error) {
			e.Log("Map's context is the consumer's: %v", ctx == want)
			return v, nil
		}, rxgo.WithContext(want)).Run())
	}},
}

// connectable runs rxgo's connectable behaviours on fresh Connectables of
// src: two observers before Connect, composed (Connect on a chained Map),
// disposed before observing, and never connected.
func connectable(e *env, src func() rxgo.Observable) {
	collect := func(ch <-chan rxgo.Item, out chan<- []string) {
		var got []string
		for it := range ch {
			got = append(got, Item(it))
		}
		out <- got
	}
	obs := e.Wrap(src())
	out := make(chan []string, 2)
	go collect(obs.Observe(e.Opts()...), out)
	go collect(obs.Observe(e.Opts()...), out)
	time.Sleep(time.Millisecond) // the bubble's clock: both observers subscribe
	ctx, cancel := context.WithCancel(e.Ctx())
	obs.Connect(ctx)
	e.Log("single: %v %v", <-out, <-out)
	cancel()

	mapped := e.Wrap(src()).Map(inc, rxgo.WithPublishStrategy())
	go collect(mapped.Observe(e.Opts()...), out)
	time.Sleep(time.Millisecond)
	ctx, cancel = context.WithCancel(e.Ctx())
	mapped.Connect(ctx)
	e.Log("composed: %v", <-out)
	cancel()

	ctx, cancel = context.WithCancel(e.Ctx())
	never := e.Wrap(src()).Observe(rxgo.WithContext(ctx))
	select {
	case it := <-never:
		e.Log("without Connect: %s", Item(it))
	case <-time.After(time.Second):
		e.Log("without Connect: nothing after a second")
	}
	cancel()
}
