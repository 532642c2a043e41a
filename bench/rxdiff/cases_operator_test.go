package rxdiff_test

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/reactivex/rxgo/v2"
)

var (
	inc    = func(_ context.Context, v any) (any, error) { return v.(int) + 1, nil }
	isEven = func(v any) bool { return v.(int)%2 == 0 }
	sum2   = func(_ context.Context, acc, v any) (any, error) {
		if acc == nil {
			return v, nil
		}
		return acc.(int) + v.(int), nil
	}
	byValue = func(a, b any) int { return a.(int) - b.(int) }
	second  = rxgo.WithDuration(time.Second)
	cpuPool = rxgo.WithCPUPool()
)

var (
	at   = func(v any) time.Time { return time.Unix(int64(v.(int)), 0) }
	join = func(_ context.Context, l, r any) (any, error) { return [2]any{l, r}, nil }
)

// opts appends the consumer's options to extra (an operator given both).
func opts(e *env, extra ...rxgo.Option) []rxgo.Option { return append(extra, e.Opts()...) }

// The operators of rxgo's Observable, with the tests of
// observable_operator_test.go they cover.
var operatorCases = []Case{
	{Name: "All", Tests: "All_True, All_False", Early: true, Run: func(e *env) {
		e.Drain(e.Src(2, 4).All(isEven))
		e.Drain(e.Src(1, 2, 3).All(isEven))
	}},
	{Name: "All (pool)", Tests: "All_Parallel_True, All_Parallel_False (All_Parallel_Error: which of the error and false comes first races in rxgo itself)", Early: true, Run: func(e *env) {
		e.Drain(e.Src(2, 4).All(isEven, cpuPool))
		e.Drain(e.Src(1, 3).All(isEven, cpuPool))
	}},
	{Name: "AverageFloat32", Tests: "AverageFloat32, _Empty, _Error", Run: func(e *env) {
		e.Drain(e.Src(float32(1), float32(2), float32(6)).AverageFloat32())
		e.Drain(e.Src().AverageFloat32())
		e.Drain(e.Src(float32(1), errFoo).AverageFloat32())
	}},
	{Name: "AverageFloat32 (pool)", Tests: "AverageFloat32_Parallel, _Parallel_Empty, _Parallel_Error", Run: func(e *env) {
		e.Drain(e.Src(float32(1), float32(2), float32(6)).AverageFloat32(cpuPool))
		e.Drain(e.Src().AverageFloat32(cpuPool))
	}},
	{Name: "AverageFloat64", Tests: "AverageFloat64, _Empty, _Error, _Parallel*", Run: func(e *env) {
		e.Drain(e.Src(1.0, 2.0, 6.0).AverageFloat64())
		e.Drain(e.Src().AverageFloat64())
		e.Drain(e.Src(1.0, errFoo).AverageFloat64())
		e.Drain(e.Src(1.0, 2.0, 6.0).AverageFloat64(cpuPool))
	}},
	{Name: "AverageInt*", Tests: "AverageInt, AverageInt8, AverageInt16, AverageInt32, AverageInt64", Run: func(e *env) {
		e.Drain(e.Src(1, 2, 6).AverageInt())
		e.Drain(e.Src(int8(1), int8(2), int8(6)).AverageInt8())
		e.Drain(e.Src(int16(1), int16(2), int16(6)).AverageInt16())
		e.Drain(e.Src(int32(1), int32(2), int32(6)).AverageInt32())
		e.Drain(e.Src(int64(1), int64(2), int64(6)).AverageInt64())
	}},
	{Name: "AverageInt, error mid-stream", Tests: "AverageInt_Error (an error followed by items)", Early: true, Run: func(e *env) {
		e.Drain(e.Src(1, errFoo, 2).AverageInt())
	}},
	{Name: "BackOffRetry", Tests: "BackOffRetry, BackOffRetry_Error", Run: func(e *env) {
		e.Drain(e.Src(1, 2).BackOffRetry(backoff.WithMaxRetries(backoff.NewConstantBackOff(time.Second), 2)))
		e.Drain(e.Src(1, errFoo).BackOffRetry(backoff.WithMaxRetries(backoff.NewConstantBackOff(time.Second), 2)))
	}},
	{Name: "BufferWithCount", Tests: "BufferWithCount, _IncompleteLastItem, _Error, _InputError", Run: func(e *env) {
		e.Drain(e.Src(1, 2, 3, 4, 5, 6).BufferWithCount(3))
		e.Drain(e.Src(1, 2, 3, 4).BufferWithCount(3))
		e.Drain(e.Src(1, 2).BufferWithCount(0))
		e.Drain(e.Src(1, 2, errFoo).BufferWithCount(3))
	}},
	{Name: "BufferWithTime", Tests: "BufferWithTime_Single, _Multiple", Run: func(e *env) {
		e.Drain(e.Src(1, 2, 3).BufferWithTime(second))
	}},
	{Name: "BufferWithTimeOrCount", Tests: "BufferWithTimeOrCount (where a buffer ends races in rxgo itself: the items are compared)", Run: func(e *env) {
		for it := range e.Src(1, 2, 3, 4, 5).BufferWithTimeOrCount(second, 2).Observe(e.Opts()...) {
			for _, v := range it.V.([]any) {
				e.Log("%v", v)
			}
		}
		e.Log("end")
	}},
	{Name: "Contains", Tests: "Contain, Contain_Parallel", Early: true, Run: func(e *env) {
		eq2 := func(v any) bool { return v == 2 }
		e.Drain(e.Src(1, 2, 3).Contains(eq2))
		e.Drain(e.Src(1, 3).Contains(eq2))
		e.Drain(e.Src(1, 2, 3).Contains(eq2, cpuPool))
	}},
	{Name: "Count", Tests: "Count, Count_Parallel", Run: func(e *env) {
		e.Drain(e.Src(1, 2, 3).Count())
		e.Drain(e.Src(1, 2, 3).Count(cpuPool))
	}},
	{Name: "Debounce", Tests: "Debounce_Error", Run: func(e *env) {
		e.Drain(e.Src(1, 2, 3).Debounce(second))
		e.Drain(e.Src(1, errFoo).Debounce(second))
	}},
	{Name: "DefaultIfEmpty", Tests: "DefaultIfEmpty_Empty, _NotEmpty, _Parallel_Empty, _Parallel_NotEmpty", Run: func(e *env) {
		e.Drain(e.Src().DefaultIfEmpty(3))
		e.Drain(e.Src(1, 2).DefaultIfEmpty(3))
		e.Drain(e.Src().DefaultIfEmpty(3, cpuPool))
	}},
	{Name: "Distinct", Tests: "Distinct, _Error, _Error2", Early: true, Run: func(e *env) {
		e.Drain(e.Src(1, 2, 2, 1, 3).Distinct(identity))
		e.Drain(e.Src(1, 2, errFoo, 3).Distinct(identity))
		e.Drain(e.Src(1, 2, 3).Distinct(func(_ context.Context, v any) (any, error) {
			if v == 3 {
				return nil, errFoo
			}
			return v, nil
		}))
	}},
	{Name: "Distinct (pool)", Tests: "Distinct_Parallel, _Parallel_Error, _Parallel_Error2", Unordered: true, Run: func(e *env) {
		e.Drain(e.Src(1, 2, 2, 1, 3).Distinct(identity, cpuPool))
	}},
	{Name: "DistinctUntilChanged", Tests: "DistinctUntilChanged, _Parallel", Run: func(e *env) {
		e.Drain(e.Src(1, 2, 2, 1, 3).DistinctUntilChanged(identity))
		e.Drain(e.Src(1, 1, 1).DistinctUntilChanged(identity, cpuPool))
	}},
	{Name: "DoOnCompleted", Tests: "DoOnCompleted_NoError, _Error", Run: func(e *env) {
		e.Wait(e.Src(1, 2).DoOnCompleted(func() { e.Log("completed") }, e.Opts()...))
		e.Wait(e.Src(1, errFoo).DoOnCompleted(func() { e.Log("completed") }, e.Opts()...))
	}},
	{Name: "DoOnError", Tests: "DoOnError_NoError, _Error", Run: func(e *env) {
		e.Wait(e.Src(1, 2).DoOnError(func(err error) { e.Log("error %v", err) }, e.Opts()...))
		e.Wait(e.Src(1, errFoo).DoOnError(func(err error) { e.Log("error %v", err) }, e.Opts()...))
	}},
	{Name: "DoOnNext", Tests: "DoOnNext_NoError, _Error", Run: func(e *env) {
		e.Wait(e.Src(1, 2).DoOnNext(func(v any) { e.Log("next %v", v) }, e.Opts()...))
		e.Wait(e.Src(1, errFoo).DoOnNext(func(v any) { e.Log("next %v", v) }, e.Opts()...))
	}},
	{Name: "DoOnNext, error mid-stream", Tests: "DoOnNext_Error (an error followed by items)", Early: true, Run: func(e *env) {
		e.Wait(e.Src(1, errFoo, 2).DoOnNext(func(v any) { e.Log("next %v", v) }, e.Opts()...))
	}},
	{Name: "ElementAt", Tests: "ElementAt, ElementAt_Parallel, ElementAt_Error", Early: true, Run: func(e *env) {
		e.Drain(e.Src(0, 1, 2, 3, 4).ElementAt(2))
		e.Drain(e.Src(0, 1, 2, 3, 4).ElementAt(2, cpuPool))
		e.Drain(e.Src(0, 1).ElementAt(3))
	}},
	{Name: "Error", Tests: "Error_NoError, Error_Error, Observable_Error", Run: func(e *env) {
		e.Log("error %v", e.Src(1, 2).Error(e.Opts()...))
		e.Log("error %v", e.Src(1, errFoo).Error(e.Opts()...))
	}},
	{Name: "Errors", Tests: "Errors_NoError, _OneError, _MultipleError, _MultipleErrorFromMap", Run: func(e *env) {
		errBar := errors.New("bar")
		e.Log("errors %v", e.Src(1, 2).Errors(e.Opts()...))
		e.Log("errors %v", e.Src(1, errFoo).Errors(e.Opts()...))
		e.Log("errors %v", e.Src(1, errFoo, errBar).Errors(opts(e, rxgo.WithErrorStrategy(rxgo.ContinueOnError))...))
		e.Log("errors %v", e.Src(1, 2, 3).Map(func(_ context.Context, v any) (any, error) {
			if v.(int) > 1 {
				return nil, errFoo
			}
			return v, nil
		}, rxgo.WithErrorStrategy(rxgo.ContinueOnError)).Errors(opts(e, rxgo.WithErrorStrategy(rxgo.ContinueOnError))...))
	}},
	{Name: "Filter", Tests: "Filter, Filter_Parallel", Run: func(e *env) {
		e.Drain(e.Src(1, 2, 3, 4).Filter(isEven))
		e.Drain(e.Src(1, 2, 3, 4).Filter(isEven, rxgo.WithPool(1)))
	}},
	{Name: "Find", Tests: "Find_NotEmpty, Find_Empty", Early: true, Run: func(e *env) {
		e.Drain(e.Src(1, 2, 3).Find(isEven))
		e.Drain(e.Src(1, 3).Find(isEven))
	}},
	{Name: "First", Tests: "First_NotEmpty, _Empty, _Parallel_NotEmpty, _Parallel_Empty", Early: true, Run: func(e *env) {
		e.Drain(e.Src(1, 2, 3).First())
		e.Drain(e.Src().First())
		e.Drain(e.Src(1, 2, 3).First(cpuPool))
	}},
	{Name: "FirstOrDefault", Tests: "FirstOrDefault_NotEmpty, _Empty, _Parallel_*", Early: true, Run: func(e *env) {
		e.Drain(e.Src(1, 2, 3).FirstOrDefault(7))
		e.Drain(e.Src().FirstOrDefault(7))
	}},
	{Name: "FlatMap", Tests: "FlatMap, FlatMap_Error1, FlatMap_Error2", Run: func(e *env) {
		twice := func(it rxgo.Item) rxgo.Observable {
			if it.E != nil {
				return rxgo.Thrown(it.E)
			}
			return rxgo.Just(it.V, it.V.(int)*10)()
		}
		e.Drain(e.Src(1, 2).FlatMap(twice))
		e.Drain(e.Src(1, errFoo).FlatMap(twice))
	}},
	{Name: "FlatMap, error mid-stream, ContinueOnError", Tests: "FlatMap_Error2", Run: func(e *env) {
		e.Drain(e.Src(1, errFoo, 2).FlatMap(func(it rxgo.Item) rxgo.Observable {
			if it.E != nil {
				return rxgo.Just("resumed")()
			}
			return rxgo.Just(it.V)()
		}, rxgo.WithErrorStrategy(rxgo.ContinueOnError)))
	}},
	{Name: "FlatMap (pool)", Tests: "FlatMap_Parallel, FlatMap_Parallel_Error1", Unordered: true, Run: func(e *env) {
		e.Drain(e.Src(1, 2, 3).FlatMap(func(it rxgo.Item) rxgo.Observable { return rxgo.Just(it.V)() }, cpuPool))
	}},
	{Name: "ForEach", Tests: "ForEach_Error, ForEach_Done", Run: func(e *env) {
		next := func(v any) { e.Log("next %v", v) }
		fail := func(err error) { e.Log("error %v", err) }
		done := func() { e.Log("done") }
		e.Wait(e.Src(1, 2).ForEach(next, fail, done, e.Opts()...))
		e.Wait(e.Src(1, errFoo).ForEach(next, fail, done, e.Opts()...))
	}},
	{Name: "IgnoreElements", Tests: "IgnoreElements, _Error, _Parallel, _Parallel_Error", Run: func(e *env) {
		e.Drain(e.Src(1, 2, 3).IgnoreElements())
		e.Drain(e.Src(1, errFoo).IgnoreElements())
		e.Drain(e.Src(1, 2, 3).IgnoreElements(cpuPool))
	}},
	{Name: "GroupBy", Tests: "GroupBy", Unordered: true, Run: func(e *env) {
		e.DrainAll(e.Src(0, 1, 2, 3, 4, 5).GroupBy(2, func(it rxgo.Item) int { return it.V.(int) % 2 }, rxgo.WithBufferedChannel(6)))
	}},
	{Name: "GroupBy, distribution out of range", Tests: "GroupBy_Error", Early: true, Run: func(e *env) {
		e.DrainAll(e.Src(0, 1, 2, 3).GroupBy(1, func(it rxgo.Item) int { return it.V.(int) % 2 }, rxgo.WithBufferedChannel(6)))
	}},
	{Name: "GroupByDynamic", Tests: "GroupByDynamic", Unordered: true, Run: func(e *env) {
		e.DrainAll(e.Src(0, 1, 2, 3, 4, 5).GroupByDynamic(func(it rxgo.Item) string {
			if it.V.(int)%2 == 0 {
				return "even"
			}
			return "odd"
		}, rxgo.WithBufferedChannel(6)))
	}},
	{Name: "Join", Tests: "Join1, Join2, Join3", Run: func(e *env) {
		e.Drain(e.Src(1, 2, 4).Join(join, e.Src(1, 3, 5), at, rxgo.WithDuration(2*time.Second)))
	}},
	{Name: "Join, error", Tests: "Join_Error_OnLeft, Join_Error_OnRight", Early: true, Run: func(e *env) {
		e.Drain(e.Src(1, errFoo).Join(join, e.Src(1, 3), at, rxgo.WithDuration(2*time.Second)))
		e.Drain(e.Src(1, 2).Join(join, e.Src(1, errFoo), at, rxgo.WithDuration(2*time.Second)))
	}},
	{Name: "Last", Tests: "Last_NotEmpty, _Empty, _Parallel_NotEmpty, _Parallel_Empty", Run: func(e *env) {
		e.Drain(e.Src(1, 2, 3).Last())
		e.Drain(e.Src().Last())
		e.Drain(e.Src(1, 2, 3).Last(cpuPool))
	}},
	{Name: "LastOrDefault", Tests: "LastOrDefault_NotEmpty, _Empty, _Parallel_*", Run: func(e *env) {
		e.Drain(e.Src(1, 2, 3).LastOrDefault(7))
		e.Drain(e.Src().LastOrDefault(7))
		e.Drain(e.Src().LastOrDefault(7, cpuPool))
	}},
	{Name: "Map", Tests: "Map_One, _Multiple, _Error, _ReturnValueAndError, _Multiple_Error", Run: func(e *env) {
		e.Drain(e.Src(1).Map(inc))
		e.Drain(e.Src(1, 2, 3).Map(inc).Map(inc))
		e.Drain(e.Src(1, errFoo).Map(inc))
		e.Drain(e.Src(1).Map(func(context.Context, any) (any, error) { return 2, errFoo }))
	}},
	{Name: "Map, error mid-stream", Tests: "Map_Error (an error followed by items, StopOnError)", Early: true, Run: func(e *env) {
		e.Drain(e.Src(1, errFoo, 2).Map(inc))
	}},
	{Name: "Map, ContinueOnError", Tests: "Map_Multiple_Error, Option_WithOnErrorStrategy_Single", Run: func(e *env) {
		e.Drain(e.Src(1, errFoo, 2).Map(inc, rxgo.WithErrorStrategy(rxgo.ContinueOnError)))
	}},
	{Name: "Map, cancelled", Tests: "Map_Cancel (whether an item passes races in rxgo itself: the end is compared)", Run: func(e *env) {
		ctx, cancel := context.WithCancel(e.Ctx())
		cancel()
		for range e.Src(1, 2).Map(inc, rxgo.WithContext(ctx)).Observe(e.Opts()...) {
		}
		e.Log("end")
	}},
	{Name: "Map (pool)", Tests: "Map_Parallel", Unordered: true, Run: func(e *env) {
		e.Drain(e.Src(1, 2, 3, 4).Map(inc, cpuPool))
	}},
	{Name: "Marshal", Tests: "Marshal, Marshal_Parallel", Run: func(e *env) {
		e.Drain(e.Src(1, "a").Marshal(json.Marshal))
		e.Drain(e.Src(1).Marshal(json.Marshal, cpuPool))
	}},
	{Name: "Max", Tests: "Max (Max_Parallel: rxgo's pooled Max panics on a nil item in gatherNext, plain or wrapped)", Run: func(e *env) {
		e.Drain(e.Src(2, 5, 1).Max(byValue))
	}},
	{Name: "Min", Tests: "Min (Min_Parallel: as Max)", Run: func(e *env) {
		e.Drain(e.Src(2, 5, 1).Min(byValue))
	}},
	{Name: "Observe", Tests: "Observe", Run: func(e *env) {
		e.Drain(e.Src(1, 2, 3))
		e.Drain(e.Src(1, errFoo, 2))
	}},
	{Name: "OnErrorResumeNext", Tests: "OnErrorResumeNext", Early: true, Run: func(e *env) {
		e.Drain(e.Src(1, errFoo, 2).OnErrorResumeNext(func(error) rxgo.Observable { return rxgo.Just(10, 20)() }))
	}},
	{Name: "OnErrorReturn", Tests: "OnErrorReturn", Run: func(e *env) {
		e.Drain(e.Src(1, errFoo, 2).OnErrorReturn(func(err error) any { return "returned " + err.Error() }))
	}},
	{Name: "OnErrorReturnItem", Tests: "OnErrorReturnItem", Run: func(e *env) {
		e.Drain(e.Src(1, errFoo, 2).OnErrorReturnItem("x"))
	}},
	{Name: "Reduce", Tests: "Reduce, _Empty, _Error", Run: func(e *env) {
		e.Drain(e.Src(1, 2, 3).Reduce(sum2))
		e.Drain(e.Src().Reduce(sum2))
		e.Drain(e.Src(1, errFoo).Reduce(sum2))
	}},
	{Name: "Reduce, the reducer fails", Tests: "Reduce_ReturnError", Early: true, Run: func(e *env) {
		e.Drain(e.Src(1, 2).Reduce(func(context.Context, any, any) (any, error) { return nil, errFoo }))
	}},
	{Name: "Reduce (pool)", Tests: "Reduce_Parallel, _Parallel_Error, _Parallel_WithErrorStrategy", Run: func(e *env) {
		e.Drain(e.Src(1, 2, 3).Reduce(sum2, rxgo.WithPool(1)))
		e.Drain(e.Src(1, 2, errFoo).Reduce(sum2, rxgo.WithPool(1), rxgo.WithErrorStrategy(rxgo.ContinueOnError)))
	}},
	{Name: "Repeat", Tests: "Repeat, Repeat_Zero, Repeat_NegativeCount, Repeat_Frequency", Run: func(e *env) {
		e.Drain(e.Src(1, 2).Repeat(1, nil))
		e.Drain(e.Src(1, 2).Repeat(0, nil))
		e.Drain(e.Src(1, 2).Repeat(-2, nil))
		e.Drain(e.Src(1).Repeat(2, second))
	}},
	{Name: "Repeat, infinite", Tests: "Repeat_Infinite", Early: true, Run: func(e *env) {
		e.Drain(e.Src(1).Repeat(rxgo.Infinite, second, rxgo.WithContext(e.Ctx())).Take(3))
	}},
	{Name: "Retry", Tests: "Retry, Retry_Error_ShouldRetry, Retry_Error_ShouldNotRetry", Run: func(e *env) {
		always := func(error) bool { return true }
		never := func(error) bool { return false }
		e.Drain(e.Src(1, 2).Retry(2, always))
		e.Drain(e.Src(1, errFoo).Retry(2, always))
		e.Drain(e.Src(1, errFoo).Retry(2, never))
	}},
	{Name: "Run", Tests: "Run, Run_Error", Run: func(e *env) {
		e.Wait(e.Src(1, 2).Map(func(_ context.Context, v any) (any, error) { e.Log("ran %v", v); return v, nil }).Run(e.Opts()...))
		e.Wait(e.Src(1, errFoo).Run(e.Opts()...))
	}},
	{Name: "Sample", Racy: true, Tests: "Sample_Empty", Run: func(e *env) {
		e.Drain(e.Src().Sample(rxgo.Range(1, 3), rxgo.WithContext(e.Ctx())))
	}},
	{Name: "Scan", Tests: "Scan, Scan_Parallel", Run: func(e *env) {
		e.Drain(e.Src(1, 2, 3).Scan(sum2))
		e.Drain(e.Src(1, 2, 3).Scan(sum2, rxgo.WithPool(1)))
	}},
	{Name: "SequenceEqual", Racy: true, Tests: "SequenceEqual_EvenSequence, _UnevenSequence, _DifferentLengthSequence, _Empty", Run: func(e *env) {
		e.Drain(e.Src(1, 2, 3).SequenceEqual(e.Src(1, 2, 3), rxgo.WithContext(e.Ctx())))
		e.Drain(e.Src(1, 2, 3).SequenceEqual(e.Src(1, 5, 3), rxgo.WithContext(e.Ctx())))
		e.Drain(e.Src(1, 2, 3).SequenceEqual(e.Src(1, 2), rxgo.WithContext(e.Ctx())))
		e.Drain(e.Src().SequenceEqual(e.Src(), rxgo.WithContext(e.Ctx())))
	}},
	{Name: "Send", Tests: "Send", Run: func(e *env) {
		out := make(chan rxgo.Item)
		e.Src(1, 2, errFoo).Send(out, e.Opts()...)
		for it := range out {
			e.Log("%s", Item(it))
		}
		e.Log("end")
	}},
	{Name: "Serialize", Tests: "Serialize_Struct, _Duplicates, _Loop, _DifferentFrom, _ContextCanceled, _Empty, _Error", Run: func(e *env) {
		id := func(v any) int { return v.(int) }
		e.Drain(e.Src(2, 0, 1).Serialize(0, id))
		e.Drain(e.Src(3, 1, 2).Serialize(1, id))
		e.Drain(e.Src().Serialize(0, id))
		e.Drain(e.Src(0, errFoo).Serialize(0, id))
	}},
	{Name: "Skip", Tests: "Skip, Skip_Parallel", Run: func(e *env) {
		e.Drain(e.Src(0, 1, 2, 3).Skip(2))
		e.Drain(e.Src(0, 1, 2, 3).Skip(2, rxgo.WithPool(1)))
	}},
	{Name: "SkipLast", Tests: "SkipLast, SkipLast_Parallel (rxgo v2.5.0's SkipLast stops reading after nth items)", Early: true, Run: func(e *env) {
		e.Drain(e.Src(0, 1, 2, 3).SkipLast(2))
		e.Drain(e.Src(0, 1, 2, 3).SkipLast(2, rxgo.WithPool(1)))
	}},
	{Name: "SkipWhile", Tests: "SkipWhile, SkipWhile_Parallel", Run: func(e *env) {
		e.Drain(e.Src(0, 2, 3, 4).SkipWhile(isEven))
		e.Drain(e.Src(0, 2, 3, 4).SkipWhile(isEven, rxgo.WithPool(1)))
	}},
	{Name: "StartWith", Tests: "StartWithIterable, _Error1, _Error2", Run: func(e *env) {
		e.Drain(e.Src(3, 4).StartWith(e.Src(1, 2)))
		e.Drain(e.Src(3, 4).StartWith(e.Src(1, errFoo)))
		e.Drain(e.Src(3, errFoo).StartWith(e.Src(1, 2)))
	}},
	{Name: "SumFloat32", Tests: "SumFloat32_OnlyFloat32, _DifferentTypes, _Error, _Empty", Run: func(e *env) {
		e.Drain(e.Src(float32(1), float32(2)).SumFloat32())
		e.Drain(e.Src(float32(1), 2, int8(3)).SumFloat32())
		e.Drain(e.Src(float32(1), errFoo).SumFloat32())
		e.Drain(e.Src().SumFloat32())
	}},
	{Name: "SumFloat64", Tests: "SumFloat64_OnlyFloat64, _DifferentTypes, _Error, _Empty", Run: func(e *env) {
		e.Drain(e.Src(1.0, 2.0).SumFloat64())
		e.Drain(e.Src(1.0, 2, float32(3)).SumFloat64())
		e.Drain(e.Src(1.0, errFoo).SumFloat64())
		e.Drain(e.Src().SumFloat64())
	}},
	{Name: "SumInt64", Tests: "SumInt64_OnlyInt64, _DifferentTypes, _Error, _Empty", Run: func(e *env) {
		e.Drain(e.Src(int64(1), int64(2)).SumInt64())
		e.Drain(e.Src(int64(1), 2, int8(3)).SumInt64())
		e.Drain(e.Src(1, errFoo).SumInt64())
		e.Drain(e.Src().SumInt64())
	}},
	{Name: "SumInt64, wrong type", Tests: "SumInt64_DifferentTypes (a type it cannot sum, followed by items)", Early: true, Run: func(e *env) {
		e.Drain(e.Src(1, "x", 2).SumInt64())
	}},
	{Name: "Take", Tests: "Take", Early: true, Run: func(e *env) {
		e.Drain(e.Src(1, 2, 3, 4).Take(2))
	}},
	{Name: "TakeLast", Tests: "TakeLast, TakeLast_LessThanNth, TakeLast_LessThanNth2", Run: func(e *env) {
		e.Drain(e.Src(1, 2, 3, 4).TakeLast(2))
		e.Drain(e.Src(1).TakeLast(2))
		e.Drain(e.Src().TakeLast(2))
	}},
	{Name: "TakeUntil", Tests: "TakeUntil", Early: true, Run: func(e *env) {
		e.Drain(e.Src(1, 2, 3, 4).TakeUntil(func(v any) bool { return v == 2 }))
	}},
	{Name: "TakeWhile", Tests: "TakeWhile", Early: true, Run: func(e *env) {
		e.Drain(e.Src(1, 2, 3, 4).TakeWhile(func(v any) bool { return v.(int) < 2 }))
	}},
	{Name: "TimeInterval", Tests: "TimeInterval", Run: func(e *env) {
		e.Drain(e.Src(1, 2, 3).TimeInterval())
	}},
	{Name: "Timestamp", Tests: "Timestamp", Run: func(e *env) {
		e.Drain(e.Src(1, 2).Timestamp())
	}},
	{Name: "ToMap", Tests: "ToMap", Run: func(e *env) {
		e.Drain(e.Src(1, 2, 3).ToMap(inc))
	}},
	{Name: "ToMapWithValueSelector", Tests: "ToMapWithValueSelector", Run: func(e *env) {
		e.Drain(e.Src(1, 2, 3).ToMapWithValueSelector(inc, identity))
	}},
	{Name: "ToSlice", Tests: "ToSlice, ToSlice_Error", Run: func(e *env) {
		s, err := e.Src(1, 2, 3).ToSlice(0, e.Opts()...)
		e.Log("slice %v %v", s, err)
		s, err = e.Src(1, errFoo).ToSlice(0, e.Opts()...)
		e.Log("slice %v %v", s, err)
	}},
	{Name: "ToSlice, ContinueOnError", Tests: "ToSlice_Error (an error followed by items)", Run: func(e *env) {
		s, err := e.Src(1, errFoo, 2).ToSlice(0, opts(e, rxgo.WithErrorStrategy(rxgo.ContinueOnError))...)
		e.Log("slice %v %v", s, err)
	}},
	{Name: "Unmarshal", Tests: "Unmarshal, _Error, _Parallel, _Parallel_Error", Run: func(e *env) {
		into := func() any { return new(int) }
		deref := func(_ context.Context, v any) (any, error) { return *v.(*int), nil }
		toBytes := func(_ context.Context, v any) (any, error) { return []byte(v.(string)), nil }
		e.Drain(e.Src("1", "2").Map(toBytes).Unmarshal(json.Unmarshal, into).Map(deref))
		e.Drain(e.Src("1", "x").Map(toBytes).Unmarshal(json.Unmarshal, into).Map(deref))
		e.Drain(e.Src("1").Map(toBytes).Unmarshal(json.Unmarshal, into, cpuPool).Map(deref))
	}},
	{Name: "WindowWithCount", Tests: "WindowWithCount, _ZeroCount, _ObservableError, _InputError", Unordered: true, Run: func(e *env) {
		e.DrainAll(e.Src(1, 2, 3, 4, 5).WindowWithCount(2))
		e.DrainAll(e.Src(1, 2).WindowWithCount(0))
		e.DrainAll(e.Src(1, 2, errFoo).WindowWithCount(2))
		e.DrainAll(e.Src(1, 2).WindowWithCount(-1))
	}},
	{Name: "WindowWithTime", Tests: "(no rxgo test)", Unordered: true, Run: func(e *env) {
		e.DrainAll(e.Src(1, 2, 3).WindowWithTime(second))
	}},
	{Name: "WindowWithTimeOrCount", Tests: "WindowWithTimeOrCount (where a window ends races in rxgo itself: the items are compared)", Unordered: true, Run: func(e *env) {
		for it := range e.Src(1, 2, 3, 4, 5).WindowWithTimeOrCount(second, 2).Observe(e.Opts()...) {
			for v := range it.V.(rxgo.Observable).Observe(e.Opts()...) {
				e.Log("%s", Item(v))
			}
		}
		e.Log("end")
	}},
	{Name: "ZipFromIterable", Tests: "ZipFromObservable, _DifferentLength1, _DifferentLength2", Early: true, Run: func(e *env) {
		pair := func(_ context.Context, a, b any) (any, error) {
			return value(a) + "+" + value(b), nil
		}
		e.Drain(e.Src(1, 2, 3).ZipFromIterable(e.Src(10, 20, 30), pair))
		e.Drain(e.Src(1, 2, 3).ZipFromIterable(e.Src(10, 20), pair))
		e.Drain(e.Src(1, 2).ZipFromIterable(e.Src(10, 20, 30), pair))
	}},
}
