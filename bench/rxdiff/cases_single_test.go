package rxdiff_test

import (
	"context"

	"github.com/reactivex/rxgo/v2"
)

// rxgo's Single and OptionalSingle (single_test.go, optionalsingle_test.go),
// wrapped with single.Bulkhead and maybe.Bulkhead: the source is a Single
// (OptionalSingle) made from a source of each kind.
var singleCases = []Case{
	{Group: "Single", Name: "Get", Tests: "Single_Get_Item, Single_Get_Error", Run: func(e *env) {
		e.Get(e.WrapSingle(e.Raw(1, 2).ElementAt(0, rxgo.WithContext(e.Ctx()))))
		e.Get(e.WrapSingle(e.Raw(errFoo).ElementAt(0, rxgo.WithContext(e.Ctx()))))
	}},
	{Group: "Single", Name: "Get, cancelled", Racy: true, Tests: "Single_Get_ContextCanceled (what Get returns races in rxgo itself: that it returns is compared)", Run: func(e *env) {
		ctx, cancel := context.WithCancel(e.Ctx())
		cancel()
		// rxgo's own Get races its context's end against the value: what
		// it returns is not compared, only that it returns.
		_, _ = e.WrapSingle(e.Raw(1).ElementAt(0, rxgo.WithContext(e.Ctx()))).Get(rxgo.WithContext(ctx))
		e.Log("returned")
	}},
	{Group: "Single", Name: "Filter", Tests: "Single_Filter_True, Single_Filter_False", Run: func(e *env) {
		e.Get(e.WrapSingle(e.Raw(2).ElementAt(0, rxgo.WithContext(e.Ctx()))).Filter(isEven))
		e.Get(e.WrapSingle(e.Raw(1).ElementAt(0, rxgo.WithContext(e.Ctx()))).Filter(isEven))
	}},
	{Group: "Single", Name: "Map", Tests: "Single_Map", Run: func(e *env) {
		e.Get(e.WrapSingle(e.Raw(1).ElementAt(0, rxgo.WithContext(e.Ctx()))).Map(inc))
	}},
	{Group: "Single", Name: "JustItem", Tests: "JustItem, Single_Get_Item", Factory: true, Run: func(e *env) {
		e.Get(e.WrapSingle(rxgo.JustItem(1)))
		e.Get(e.WrapSingle(rxgo.JustItem(1, rxgo.WithContext(e.Ctx()))).Map(inc))
	}},
	{Group: "OptionalSingle", Name: "Get", Tests: "OptionalSingle_Get_Item, _Get_Empty, _Get_Error", Run: func(e *env) {
		e.Get(e.WrapMaybe(e.Raw(1).First(rxgo.WithContext(e.Ctx()))))
		e.Get(e.WrapMaybe(e.Raw().First(rxgo.WithContext(e.Ctx()))))
		e.Get(e.WrapMaybe(e.Raw(errFoo).First(rxgo.WithContext(e.Ctx()))))
	}},
	{Group: "OptionalSingle", Name: "Get of a longer source", Tests: "OptionalSingle_Get_Item (First of several items)", Early: true, Run: func(e *env) {
		e.Get(e.WrapMaybe(e.Raw(1, 2, 3).First(rxgo.WithContext(e.Ctx()))))
	}},
	{Group: "OptionalSingle", Name: "Get, cancelled", Racy: true, Tests: "OptionalSingle_Get_ContextCanceled (as Single)", Run: func(e *env) {
		ctx, cancel := context.WithCancel(e.Ctx())
		cancel()
		// rxgo's own Get races its context's end against the value: what
		// it returns is not compared, only that it returns.
		_, _ = e.WrapMaybe(e.Raw(1).First(rxgo.WithContext(e.Ctx()))).Get(rxgo.WithContext(ctx))
		e.Log("returned")
	}},
	{Group: "OptionalSingle", Name: "Map", Tests: "OptionalSingle_Map", Run: func(e *env) {
		e.Get(e.WrapMaybe(e.Raw(1).First(rxgo.WithContext(e.Ctx()))).Map(inc))
		e.Get(e.WrapMaybe(e.Raw().First(rxgo.WithContext(e.Ctx()))).Map(inc))
	}},
	{Group: "OptionalSingle", Name: "Observe", Tests: "OptionalSingle_Observe", Run: func(e *env) {
		e.Drain(e.WrapMaybe(e.Raw(1).Last(rxgo.WithContext(e.Ctx()))))
		e.Drain(e.WrapMaybe(e.Raw().Last(rxgo.WithContext(e.Ctx()))))
	}},
}
