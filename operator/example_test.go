package operator_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/reactivex/rxgo/v2"

	bulkhead "github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/completable"
	"github.com/rxbulkhead/bulkhead/flowable"
	"github.com/rxbulkhead/bulkhead/operator"
)

func ExampleOf() {
	walmart, _ := bulkhead.New("walmart", bulkhead.Config{MaxConcurrentCalls: 10})
	op := operator.Of(walmart) // keep one per partner

	orders := op.Observable(rxgo.Just("PO-1", "PO-2")())
	for item := range orders.Observe() {
		fmt.Println(item.V)
	}
	ack := op.Completable(completable.Complete())
	fmt.Println("ack:", completable.Await(context.Background(), ack))
	// Output:
	// PO-1
	// PO-2
	// ack: <nil>
}

func ExampleOp_Observable() {
	walmart, _ := bulkhead.New("walmart", bulkhead.Config{MaxConcurrentCalls: 1})
	lines := operator.Of(walmart).Observable(rxgo.Just(1, 2, 3)()).
		Map(func(_ context.Context, v any) (any, error) { return v.(int) * 10, nil })
	for item := range lines.Observe() {
		fmt.Println(item.V)
	}
	// Output:
	// 10
	// 20
	// 30
}

func ExampleOp_Single() {
	walmart, _ := bulkhead.New("walmart", bulkhead.Config{MaxConcurrentCalls: 1})
	count := operator.Of(walmart).Single(rxgo.Just("a", "b", "c")().Count())
	item, err := count.Get()
	fmt.Println(item.V, err)
	// Output: 3 <nil>
}

func ExampleOp_Maybe() {
	walmart, _ := bulkhead.New("walmart", bulkhead.Config{MaxConcurrentCalls: 1})
	first := operator.Of(walmart).Maybe(rxgo.Just("ASN-7", "ASN-8")().First())
	// First stops reading after its value: with a context, the bulkhead
	// ends the rest of the source once the value is in.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	item, err := first.Get(rxgo.WithContext(ctx))
	fmt.Println(item.V, err)
	// Output: ASN-7 <nil>
}

func ExampleOp_Completable() {
	walmart, _ := bulkhead.New("walmart", bulkhead.Config{MaxConcurrentCalls: 1})
	send := operator.Of(walmart).Completable(completable.FromFunc(func(context.Context) error {
		fmt.Println("sending invoice")
		return nil
	}))
	fmt.Println(completable.Await(context.Background(), send))
	// Output:
	// sending invoice
	// <nil>
}

func ExampleFlowable() {
	walmart, _ := bulkhead.New("walmart", bulkhead.Config{MaxConcurrentCalls: 1})
	lines := operator.Flowable(operator.Of(walmart), flowable.Range(1, 3))
	lines.Subscribe(flowable.Funcs[int]{
		Next:     func(v int) { fmt.Println("line", v) },
		Complete: func() { fmt.Println("done") },
	})
	// Output:
	// line 1
	// line 2
	// line 3
	// done
}

func ExampleOp_Apply() {
	walmart, _ := bulkhead.New("walmart", bulkhead.Config{MaxConcurrentCalls: 1})
	op := operator.Of(walmart)

	// A source whose type is known only at run time, e.g. from a plugin.
	var src any = rxgo.Just("PO-1")()
	wrapped, err := op.Apply(src)
	if err != nil {
		fmt.Println(err)
		return
	}
	for item := range wrapped.(rxgo.Observable).Observe() {
		fmt.Println(item.V)
	}

	_, err = op.Apply(flowable.Just(1)) // a Publisher[int]: use operator.Flowable
	fmt.Println(errors.Is(err, operator.ErrUnsupportedSource))
	_, err = op.Apply("PO-2")
	fmt.Println(err)
	// Output:
	// PO-1
	// true
	// operator: unsupported source: string is none of rxgo.Observable, rxgo.Single, rxgo.OptionalSingle, completable.Completable, flowable.Publisher[any]
}

func ExampleOp_Bulkhead() {
	walmart, _ := bulkhead.New("walmart", bulkhead.DefaultConfig())
	fmt.Println(operator.Of(walmart).Bulkhead().Name())
	// Output: walmart
}
