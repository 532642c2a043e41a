package bulkheadgrpc_test

import (
	"context"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/rxbulkhead/bulkhead"
	bulkheadgrpc "github.com/rxbulkhead/bulkhead/contrib/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// TestStressPermitsComeBackWhateverTheCallerDoes runs unary calls and
// streams through the client and server interceptors at once, with
// contexts cancelled at random points and streams read to their end or
// abandoned. A permit given back twice panics; one never given back fails
// the leak check of both registries.
func TestStressPermitsComeBackWhateverTheCallerDoes(t *testing.T) {
	const workers, iterations = 6, 60
	cfg := bulkhead.Config{MaxConcurrentCalls: 2, MaxWaitDuration: 5 * time.Millisecond, MaxQueuedCalls: bulkhead.Unbounded}
	serverReg, clientReg := newRegistry(t, cfg), newRegistry(t, cfg)
	h := newHealthServer(false) // answers at once; Watch ends after one message
	c := limitedClient(t, clientReg, limitedServer(t, serverReg, h, bulkheadgrpc.WithKey(bulkheadgrpc.Service)))

	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 2))
			for range iterations {
				ctx, cancel := context.WithCancel(context.Background())
				if rng.IntN(3) == 0 {
					time.AfterFunc(time.Duration(rng.IntN(500))*time.Microsecond, cancel)
				}
				if rng.IntN(2) == 0 {
					c.Check(ctx, &healthpb.HealthCheckRequest{})
				} else if s, err := c.Watch(ctx, &healthpb.HealthCheckRequest{}); err == nil {
					for range rng.IntN(3) { // 0: abandoned, its context ends below
						if _, err := s.Recv(); err != nil {
							break
						}
					}
				}
				cancel()
			}
		})
	}
	wg.Wait()
	// Abandoned streams end on gRPC's goroutine after cancel: wait for them.
	for _, reg := range []*bulkhead.Registry{serverReg, clientReg} {
		for _, bh := range reg.All() {
			awaitMetrics(t, bh, "every permit to come back", func(m bulkhead.Metrics) bool { return m.InFlightCalls == 0 && m.QueuedCalls == 0 })
		}
	}
	if h.received.Load() == 0 {
		t.Fatal("no call reached the server")
	}
}
