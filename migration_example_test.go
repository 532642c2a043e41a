package bulkhead_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/rxbulkhead/bulkhead"
)

// The Go side of the resilience4j snippet in
// docs/migration-from-resilience4j.md: a registry with a default config, an
// event consumer for rejections, and a decorated call.
func Example_fromResilience4j() {
	// BulkheadConfig.custom().maxConcurrentCalls(1).maxWaitDuration(Duration.ZERO).build()
	// BulkheadRegistry.of(config)
	registry, err := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: 0})
	if err != nil {
		log.Fatal(err)
	}
	walmart, err := registry.Get("walmart")
	if err != nil {
		panic(err)
	}

	// bulkhead.getEventPublisher().onCallRejected(...)
	walmart.OnEvent(func(e bulkhead.Event) {
		if e.Type == bulkhead.CallRejected {
			fmt.Println("event:", e.Type, e.Reason)
		}
	})

	// Bulkhead.decorateSupplier(bulkhead, backend::placeOrder)
	placeOrder := func(ctx context.Context) (string, error) {
		if err := walmart.AcquirePermission(ctx); err != nil {
			return "", err
		}
		defer walmart.FinishCall()
		return "order accepted", nil
	}

	fmt.Println(placeOrder(context.Background()))

	walmart.TryAcquirePermission() // another call holds the only permit
	_, err = placeOrder(context.Background())
	// catch (BulkheadFullException e)
	if errors.Is(err, bulkhead.ErrBulkheadFull) {
		fmt.Println(err)
	}
	walmart.FinishCall()

	// bulkhead.changeConfig(...)
	_ = walmart.ChangeConfig(bulkhead.Config{MaxConcurrentCalls: 2, MaxWaitDuration: 10 * time.Millisecond, MaxQueuedCalls: bulkhead.Unbounded})
	m := walmart.Metrics()
	fmt.Println(m.AvailableConcurrentCalls, m.MaxAllowedConcurrentCalls)
	// Output:
	// order accepted <nil>
	// event: rejected no wait
	// bulkhead "walmart": full, does not permit further calls (no wait)
	// 2 2
}
