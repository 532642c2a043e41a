package flowable_test

import (
	"context"
	"fmt"

	bulkhead "github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/flowable"
	"github.com/rxbulkhead/bulkhead/pool"
)

func ExampleFromPool() {
	soap, _ := pool.New("legacy-soap", pool.Config{MaxWorkers: 4, QueueCapacity: 16, MaxQueueWait: bulkhead.NoTimeout})
	defer soap.Close(context.Background())

	done := make(chan struct{})
	flowable.FromPool(soap, func(context.Context) (string, error) {
		return "997 functional ack", nil // a blocking call, on a worker
	}).Subscribe(flowable.Funcs[string]{
		Next:     func(v string) { fmt.Println("got", v) },
		Error:    func(err error) { fmt.Println("error", err) },
		Complete: func() { fmt.Println("complete"); close(done) },
	})
	<-done
	// Output:
	// got 997 functional ack
	// complete
}
