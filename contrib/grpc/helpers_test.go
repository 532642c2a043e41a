package bulkheadgrpc_test

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/testkit"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// waitTimeout bounds every wait on the real loopback servers.
const waitTimeout = 10 * time.Second

func newRegistry(t *testing.T, cfg bulkhead.Config) *bulkhead.Registry {
	t.Helper()
	reg, err := bulkhead.NewRegistry(cfg)
	if err != nil {
		t.Fatal(err)
	}
	testkit.CheckRegistry(t, reg)
	return reg
}

// healthServer is a grpc.health.v1.Health service whose Check and Watch
// hold each call until Release, counting what reaches them.
type healthServer struct {
	healthpb.UnimplementedHealthServer
	received  atomic.Int64
	inFlight  atomic.Int64
	peak      atomic.Int64
	arrived   chan struct{}
	release   chan struct{}
	closeOnce sync.Once
}

func newHealthServer(hold bool) *healthServer {
	h := &healthServer{arrived: make(chan struct{}, 1024), release: make(chan struct{})}
	if !hold {
		h.Release()
	}
	return h
}

func (h *healthServer) Release() { h.closeOnce.Do(func() { close(h.release) }) }

func (h *healthServer) enter() func() {
	h.received.Add(1)
	n := h.inFlight.Add(1)
	for {
		old := h.peak.Load()
		if n <= old || h.peak.CompareAndSwap(old, n) {
			break
		}
	}
	h.arrived <- struct{}{}
	return func() { h.inFlight.Add(-1) }
}

func (h *healthServer) Check(ctx context.Context, _ *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	defer h.enter()()
	select {
	case <-h.release:
		return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Watch sends SERVING at once, then holds the stream open until Release.
func (h *healthServer) Watch(_ *healthpb.HealthCheckRequest, s grpc.ServerStreamingServer[healthpb.HealthCheckResponse]) error {
	defer h.enter()()
	if err := s.Send(&healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}); err != nil {
		return err
	}
	select {
	case <-h.release:
		return nil
	case <-s.Context().Done():
		return s.Context().Err()
	}
}

func (h *healthServer) awaitArrivals(t *testing.T, n int) {
	t.Helper()
	timeout := time.After(waitTimeout)
	for range n {
		select {
		case <-h.arrived:
		case <-timeout:
			t.Fatalf("timed out waiting for a call to reach the server (received %d)", h.received.Load())
		}
	}
}

// serve starts a grpc.Server on a 127.0.0.1 listener, stopped at the end of
// the test, and returns its address.
func serve(t *testing.T, h *healthServer, opts ...grpc.ServerOption) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(opts...)
	healthpb.RegisterHealthServer(srv, h)
	go srv.Serve(lis)
	t.Cleanup(func() {
		h.Release()
		srv.Stop()
	})
	return lis.Addr().String()
}

// dial returns a health client of addr, closed at the end of the test.
func dial(t *testing.T, addr string, opts ...grpc.DialOption) healthpb.HealthClient {
	t.Helper()
	opts = append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}, opts...)
	cc, err := grpc.NewClient(addr, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return healthpb.NewHealthClient(cc)
}

// goCheck runs Check in a new goroutine; its error arrives on the channel.
func goCheck(ctx context.Context, c healthpb.HealthClient) <-chan error {
	ch := make(chan error, 1)
	go func() {
		_, err := c.Check(ctx, &healthpb.HealthCheckRequest{})
		ch <- err
	}()
	return ch
}

func await(t *testing.T, ch <-chan error) error {
	t.Helper()
	select {
	case err := <-ch:
		return err
	case <-time.After(waitTimeout):
		t.Fatal("timed out waiting for a call to return")
		return nil
	}
}

// awaitMetrics waits until bh's metrics satisfy ok. Queueing and a stream's
// asynchronous end publish no event the test could wait on, so the metrics
// are polled, with a bound.
func awaitMetrics(t *testing.T, bh *bulkhead.Semaphore, what string, ok func(bulkhead.Metrics) bool) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for !ok(bh.Metrics()) {
		if time.Now().After(deadline) {
			t.Fatalf("bulkhead %s: timed out waiting for %s (metrics %+v)", bh.Name(), what, bh.Metrics())
		}
		time.Sleep(100 * time.Microsecond)
	}
}

func find(t *testing.T, reg *bulkhead.Registry, name string) *bulkhead.Semaphore {
	t.Helper()
	bh, ok := reg.Find(name)
	if !ok {
		t.Fatalf("no bulkhead %q in the registry", name)
	}
	return bh
}
