package observable_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/reactivex/rxgo/v2"

	bulkhead "github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/observable"
)

// send stands for the call to a partner's endpoint: a cold Observable that
// posts one document when observed and emits the partner's acknowledgement.
func send(partner, doc string) rxgo.Observable {
	return rxgo.Defer([]rxgo.Producer{func(ctx context.Context, next chan<- rxgo.Item) {
		rxgo.Of(partner+" ack "+doc).SendContext(ctx, next)
	}})
}

// deliver builds the pipeline of one partner: every document is sent under a
// permit of the partner's own bulkhead, so a slow partner cannot take the
// hub's capacity from the others. A document rejected because the partner is
// full is tried again, with a fresh permit request, up to twice.
func deliver(ctx context.Context, hub *bulkhead.Registry, partner string, docs ...any) (rxgo.Observable, error) {
	bh, err := hub.Get(partner)
	if err != nil {
		return nil, err
	}
	viaPartner := observable.Transformer(bh)
	isFull := func(err error) bool { return errors.Is(err, bulkhead.ErrBulkheadFull) }
	return rxgo.Just(docs...)().FlatMap(func(doc rxgo.Item) rxgo.Observable {
		return viaPartner(send(partner, doc.V.(string))).Retry(2, isFull, rxgo.WithContext(ctx))
	}, rxgo.WithContext(ctx)), nil
}

func Example_perPartnerPipeline() {
	hub, err := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 4, MaxWaitDuration: time.Second, MaxQueuedCalls: bulkhead.Unbounded})
	if err != nil {
		log.Fatal(err)
	}

	// The consumer's context: cancelled when we are done, so that no
	// permit outlives an early exit.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	for _, partner := range []string{"walmart", "target"} {
		acks, err := deliver(ctx, hub, partner, "850", "856")
		if err != nil {
			fmt.Println(err)
			return
		}
		for item := range acks.Observe() { // drained to the end
			if item.E != nil {
				fmt.Println("failed:", item.E)
				continue
			}
			fmt.Println(item.V)
		}
	}
	for _, bh := range hub.All() {
		fmt.Println(bh.Name(), "in flight:", bh.Metrics().InFlightCalls)
	}
	// Unordered output:
	// walmart ack 850
	// walmart ack 856
	// target ack 850
	// target ack 856
	// walmart in flight: 0
	// target in flight: 0
}
