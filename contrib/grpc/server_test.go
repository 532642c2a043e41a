package bulkheadgrpc_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/rxbulkhead/bulkhead"
	bulkheadgrpc "github.com/rxbulkhead/bulkhead/contrib/grpc"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

const checkMethod = "/grpc.health.v1.Health/Check"

// limitedServer serves h behind both server interceptors.
func limitedServer(t *testing.T, reg *bulkhead.Registry, h *healthServer, opts ...bulkheadgrpc.Option) string {
	t.Helper()
	unary, err := bulkheadgrpc.UnaryServerInterceptor(reg, opts...)
	if err != nil {
		t.Fatal(err)
	}
	stream, err := bulkheadgrpc.StreamServerInterceptor(reg, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return serve(t, h, grpc.ChainUnaryInterceptor(unary), grpc.ChainStreamInterceptor(stream))
}

func TestServerRunsAtMostTheLimitAtOnce(t *testing.T) {
	const limit, calls = 3, 30
	reg := newRegistry(t, bulkhead.Config{MaxConcurrentCalls: limit, MaxWaitDuration: waitTimeout, MaxQueuedCalls: bulkhead.Unbounded})
	h := newHealthServer(true)
	c := dial(t, limitedServer(t, reg, h))

	var errs []<-chan error
	for range calls {
		errs = append(errs, goCheck(context.Background(), c))
	}
	h.awaitArrivals(t, limit)
	awaitMetrics(t, find(t, reg, checkMethod), "every other call to queue", func(m bulkhead.Metrics) bool { return m.QueuedCalls == calls-limit })
	if got := h.received.Load(); got != limit {
		t.Errorf("handler entered %d times with %d permits", got, limit)
	}
	h.Release()
	for _, ch := range errs {
		if err := await(t, ch); err != nil {
			t.Error(err)
		}
	}
	if got := h.peak.Load(); got > limit {
		t.Errorf("the server ran %d calls at once; the limit is %d", got, limit)
	}
}

func TestServerRejectsWithResourceExhaustedBeforeTheHandler(t *testing.T) {
	reg := newRegistry(t, bulkhead.Config{MaxConcurrentCalls: 1})
	h := newHealthServer(true)
	c := dial(t, limitedServer(t, reg, h))

	first := goCheck(context.Background(), c)
	h.awaitArrivals(t, 1)
	_, err := c.Check(context.Background(), &healthpb.HealthCheckRequest{})
	if want := (&bulkhead.FullError{Name: checkMethod, Reason: bulkhead.NoWait}).Error(); status.Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), want) {
		t.Errorf("second call: %v; want ResourceExhausted naming the bulkhead", err)
	}
	h.Release()
	if err := await(t, first); err != nil {
		t.Fatal(err)
	}
	if got := h.received.Load(); got != 1 {
		t.Errorf("the handler ran %d times, want 1", got)
	}
}

func TestServerQueuedCallWithdrawnWhenTheClientCancels(t *testing.T) {
	reg := newRegistry(t, bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Hour, MaxQueuedCalls: bulkhead.Unbounded})
	cancelled := make(chan struct{}, 1)
	t.Cleanup(reg.OnEvent(func(e bulkhead.Event) {
		if e.Type == bulkhead.CallCancelled {
			cancelled <- struct{}{}
		}
	}))
	h := newHealthServer(true)
	c := dial(t, limitedServer(t, reg, h))

	first := goCheck(context.Background(), c)
	h.awaitArrivals(t, 1)
	ctx, cancel := context.WithCancel(context.Background())
	queued := goCheck(ctx, c)
	bh := find(t, reg, checkMethod)
	awaitMetrics(t, bh, "the second call to queue", func(m bulkhead.Metrics) bool { return m.QueuedCalls == 1 })
	cancel()
	select {
	case <-cancelled:
	case <-time.After(waitTimeout):
		t.Fatal("the queued call was not withdrawn when its client cancelled")
	}
	if err := await(t, queued); status.Code(err) != codes.Canceled {
		t.Errorf("cancelled call: %v", err)
	}
	if m := bh.Metrics(); m.QueuedCalls != 0 || m.InFlightCalls != 1 {
		t.Errorf("after the cancel: %d queued, %d in flight; want 0 and 1", m.QueuedCalls, m.InFlightCalls)
	}
	h.Release()
	if err := await(t, first); err != nil {
		t.Fatal(err)
	}
	if got := h.received.Load(); got != 1 {
		t.Errorf("the handler ran %d times, want 1", got)
	}
}

func TestServerStreamHoldsItsPermitUntilItEnds(t *testing.T) {
	reg := newRegistry(t, bulkhead.Config{MaxConcurrentCalls: 1})
	h := newHealthServer(true)
	c := dial(t, limitedServer(t, reg, h, bulkheadgrpc.WithKey(bulkheadgrpc.Service)))

	w, err := c.Watch(context.Background(), &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Recv(); err != nil {
		t.Fatal(err)
	}
	// The open stream holds the service's only permit.
	if _, err := c.Check(context.Background(), &healthpb.HealthCheckRequest{}); status.Code(err) != codes.ResourceExhausted {
		t.Errorf("call while the stream is open: %v, want ResourceExhausted", err)
	}
	h.Release()
	if _, err := w.Recv(); err == nil {
		t.Fatal("the stream did not end")
	}
	// The stream ended on the server before its status reached the client.
	if _, err := c.Check(context.Background(), &healthpb.HealthCheckRequest{}); err != nil {
		t.Errorf("call after the stream ended: %v", err)
	}
}

func TestServerKeyFromIncomingMetadata(t *testing.T) {
	reg := newRegistry(t, bulkhead.Config{MaxConcurrentCalls: 1})
	h := newHealthServer(true)
	c := dial(t, limitedServer(t, reg, h, bulkheadgrpc.WithKey(bulkheadgrpc.IncomingMetadata("x-tenant"))))
	tenant := func(name string) context.Context {
		return metadata.AppendToOutgoingContext(context.Background(), "x-tenant", name)
	}
	first := goCheck(tenant("acme"), c)
	h.awaitArrivals(t, 1)
	other := goCheck(tenant("globex"), c)
	h.awaitArrivals(t, 1) // another tenant is not affected
	if _, err := c.Check(tenant("acme"), &healthpb.HealthCheckRequest{}); status.Code(err) != codes.ResourceExhausted {
		t.Errorf("second acme call: %v, want ResourceExhausted", err)
	}
	if _, err := c.Check(context.Background(), &healthpb.HealthCheckRequest{}); status.Code(err) != codes.Internal ||
		!strings.Contains(err.Error(), "empty bulkhead name for "+checkMethod) {
		t.Errorf("call without a tenant: %v, want Internal naming the method", err)
	}
	h.Release()
	for _, ch := range []<-chan error{first, other} {
		if err := await(t, ch); err != nil {
			t.Error(err)
		}
	}
	if got := h.received.Load(); got != 2 {
		t.Errorf("the handler ran %d times, want 2", got)
	}
}
