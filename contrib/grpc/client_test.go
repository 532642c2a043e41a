package bulkheadgrpc_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/rxbulkhead/bulkhead"
	bulkheadgrpc "github.com/rxbulkhead/bulkhead/contrib/grpc"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// limitedClient dials addr through both client interceptors.
func limitedClient(t *testing.T, reg *bulkhead.Registry, addr string, opts ...bulkheadgrpc.Option) healthpb.HealthClient {
	t.Helper()
	unary, err := bulkheadgrpc.UnaryClientInterceptor(reg, opts...)
	if err != nil {
		t.Fatal(err)
	}
	stream, err := bulkheadgrpc.StreamClientInterceptor(reg, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return dial(t, addr, grpc.WithChainUnaryInterceptor(unary), grpc.WithChainStreamInterceptor(stream))
}

func TestClientRejectedCallIsNotSentAndNamesThePartner(t *testing.T) {
	reg := newRegistry(t, bulkhead.Config{MaxConcurrentCalls: 1})
	h := newHealthServer(true)
	addr := serve(t, h)
	c := limitedClient(t, reg, addr)

	first := goCheck(context.Background(), c)
	h.awaitArrivals(t, 1)
	_, err := c.Check(context.Background(), &healthpb.HealthCheckRequest{})
	if !errors.Is(err, bulkhead.ErrBulkheadFull) || status.Code(err) != codes.ResourceExhausted {
		t.Errorf("second call: %v; want ResourceExhausted matching ErrBulkheadFull", err)
	}
	var full *bulkhead.FullError
	if !errors.As(err, &full) || full.Name != addr {
		t.Errorf("second call: %v; want a *FullError naming %s", err, addr)
	}
	h.Release()
	if err := await(t, first); err != nil {
		t.Fatal(err)
	}
	if got := h.received.Load(); got != 1 {
		t.Errorf("the server received %d calls, want 1", got)
	}
}

func TestClientSendsAtMostTheLimitAtOnce(t *testing.T) {
	const limit, calls = 3, 30
	reg := newRegistry(t, bulkhead.Config{MaxConcurrentCalls: limit, MaxWaitDuration: waitTimeout, MaxQueuedCalls: bulkhead.Unbounded})
	h := newHealthServer(true)
	addr := serve(t, h)
	c := limitedClient(t, reg, addr)
	var errs []<-chan error
	for range calls {
		errs = append(errs, goCheck(context.Background(), c))
	}
	h.awaitArrivals(t, limit)
	awaitMetrics(t, find(t, reg, addr), "every other call to queue", func(m bulkhead.Metrics) bool { return m.QueuedCalls == calls-limit })
	h.Release()
	for _, ch := range errs {
		if err := await(t, ch); err != nil {
			t.Error(err)
		}
	}
	if got := h.peak.Load(); got > limit {
		t.Errorf("the server saw %d calls at once; the limit is %d", got, limit)
	}
}

func TestClientHungPartnerHoldsOnlyItsOwnPermits(t *testing.T) {
	reg := newRegistry(t, bulkhead.Config{MaxConcurrentCalls: 2, MaxWaitDuration: waitTimeout, MaxQueuedCalls: bulkhead.Unbounded})
	hung, healthy := newHealthServer(true), newHealthServer(false)
	hungAddr, healthyAddr := serve(t, hung), serve(t, healthy)
	toHung, toHealthy := limitedClient(t, reg, hungAddr), limitedClient(t, reg, healthyAddr)

	held := []<-chan error{goCheck(context.Background(), toHung), goCheck(context.Background(), toHung)}
	hung.awaitArrivals(t, 2)
	held = append(held, goCheck(context.Background(), toHung))
	awaitMetrics(t, find(t, reg, hungAddr), "a call to wait for the hung partner", func(m bulkhead.Metrics) bool { return m.QueuedCalls == 1 })
	// 20 calls at once (10 times its permits) to the other partner all get
	// through while the hung one holds its permits and a call waits for them.
	var errs []<-chan error
	for range 20 {
		errs = append(errs, goCheck(context.Background(), toHealthy))
	}
	for _, ch := range errs {
		if err := await(t, ch); err != nil {
			t.Errorf("call to the healthy partner failed while another hung: %v", err)
		}
	}
	hung.Release()
	for _, ch := range held {
		if err := await(t, ch); err != nil {
			t.Error(err)
		}
	}
}

func TestClientQueuedCallLeavesTheQueueAtItsDeadline(t *testing.T) {
	reg := newRegistry(t, bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Hour, MaxQueuedCalls: bulkhead.Unbounded})
	h := newHealthServer(true)
	addr := serve(t, h)
	c := limitedClient(t, reg, addr)
	first := goCheck(context.Background(), c)
	h.awaitArrivals(t, 1)

	ctx, cancel := context.WithCancel(context.Background())
	queued := goCheck(ctx, c)
	bh := find(t, reg, addr)
	awaitMetrics(t, bh, "the call to queue", func(m bulkhead.Metrics) bool { return m.QueuedCalls == 1 })
	cancel()
	err := await(t, queued)
	if status.Code(err) != codes.Canceled || !errors.Is(err, context.Canceled) {
		t.Errorf("withdrawn call: %v; want Canceled matching context.Canceled", err)
	}
	if m := bh.Metrics(); m.QueuedCalls != 0 || m.InFlightCalls != 1 {
		t.Errorf("after the cancel: %d queued, %d in flight; want 0 and 1", m.QueuedCalls, m.InFlightCalls)
	}
	h.Release()
	if err := await(t, first); err != nil {
		t.Fatal(err)
	}
	if got := h.received.Load(); got != 1 {
		t.Errorf("the server received %d calls, want 1", got)
	}
}

func TestClientStreamHoldsItsPermitUntilItEnds(t *testing.T) {
	t.Run("read to its end", func(t *testing.T) {
		reg := newRegistry(t, bulkhead.Config{MaxConcurrentCalls: 1})
		h := newHealthServer(true)
		addr := serve(t, h)
		c := limitedClient(t, reg, addr)
		w, err := c.Watch(context.Background(), &healthpb.HealthCheckRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Recv(); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Check(context.Background(), &healthpb.HealthCheckRequest{}); !errors.Is(err, bulkhead.ErrBulkheadFull) {
			t.Errorf("call while the stream is open: %v, want ErrBulkheadFull", err)
		}
		h.Release()
		if _, err := w.Recv(); err != io.EOF {
			t.Fatalf("end of stream: %v, want io.EOF", err)
		}
		// RecvMsg's io.EOF gave the permit back before it returned.
		if m := find(t, reg, addr).Metrics(); m.InFlightCalls != 0 {
			t.Errorf("after io.EOF: %d in flight, want 0", m.InFlightCalls)
		}
		w.Recv() // nothing more to give back
		if _, err := c.Check(context.Background(), &healthpb.HealthCheckRequest{}); err != nil {
			t.Errorf("call after the stream ended: %v", err)
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		reg := newRegistry(t, bulkhead.Config{MaxConcurrentCalls: 1})
		h := newHealthServer(true)
		addr := serve(t, h)
		c := limitedClient(t, reg, addr)
		ctx, cancel := context.WithCancel(context.Background())
		w, err := c.Watch(ctx, &healthpb.HealthCheckRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Recv(); err != nil {
			t.Fatal(err)
		}
		cancel() // never read again: the context's end gives the permit back
		awaitMetrics(t, find(t, reg, addr), "the permit to come back", func(m bulkhead.Metrics) bool { return m.InFlightCalls == 0 })
	})
	t.Run("connection closed", func(t *testing.T) {
		reg := newRegistry(t, bulkhead.Config{MaxConcurrentCalls: 1})
		h := newHealthServer(true)
		addr := serve(t, h)
		stream, err := bulkheadgrpc.StreamClientInterceptor(reg)
		if err != nil {
			t.Fatal(err)
		}
		cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithChainStreamInterceptor(stream))
		if err != nil {
			t.Fatal(err)
		}
		w, err := healthpb.NewHealthClient(cc).Watch(context.Background(), &healthpb.HealthCheckRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Recv(); err != nil {
			t.Fatal(err)
		}
		cc.Close() // the stream is never read again
		awaitMetrics(t, find(t, reg, addr), "the permit to come back", func(m bulkhead.Metrics) bool { return m.InFlightCalls == 0 })
	})
}

func TestClientKeyFromOutgoingMetadata(t *testing.T) {
	reg := newRegistry(t, bulkhead.Config{MaxConcurrentCalls: 1})
	h := newHealthServer(true)
	c := limitedClient(t, reg, serve(t, h), bulkheadgrpc.WithKey(bulkheadgrpc.OutgoingMetadata("x-partner")))
	ctx := metadata.AppendToOutgoingContext(context.Background(), "x-partner", "walmart")
	first := goCheck(ctx, c)
	h.awaitArrivals(t, 1)
	_, err := c.Check(ctx, &healthpb.HealthCheckRequest{})
	if want := (&bulkhead.FullError{Name: "walmart", Reason: bulkhead.NoWait}).Error(); !strings.Contains(err.Error(), want) {
		t.Errorf("second call: %v, want a rejection by walmart's bulkhead", err)
	}
	h.Release()
	if err := await(t, first); err != nil {
		t.Fatal(err)
	}
}

func TestBadInputIsAnErrorNotAPanic(t *testing.T) {
	for name, make := range map[string]func() error{
		"UnaryClientInterceptor":  func() error { _, err := bulkheadgrpc.UnaryClientInterceptor(nil); return err },
		"StreamClientInterceptor": func() error { _, err := bulkheadgrpc.StreamClientInterceptor(nil); return err },
		"UnaryServerInterceptor":  func() error { _, err := bulkheadgrpc.UnaryServerInterceptor(nil); return err },
		"StreamServerInterceptor": func() error { _, err := bulkheadgrpc.StreamServerInterceptor(nil); return err },
	} {
		if err := make(); err == nil || err.Error() != "bulkheadgrpc: "+name+": registry is nil" {
			t.Errorf("%s(nil): %v", name, err)
		}
	}
	reg := newRegistry(t, bulkhead.DefaultConfig())
	if _, err := bulkheadgrpc.UnaryClientInterceptor(reg, bulkheadgrpc.WithKey(nil)); err == nil || !strings.Contains(err.Error(), "WithKey: key function is nil") {
		t.Errorf("nil key: %v", err)
	}
	if _, err := bulkheadgrpc.UnaryServerInterceptor(reg, nil); err == nil || !strings.Contains(err.Error(), "option #1 is nil") {
		t.Errorf("nil option: %v", err)
	}

	// A partner whose configuration the Registry does not have (it
	// validates those it has): the call fails and is not sent.
	h := newHealthServer(false)
	c := limitedClient(t, reg, serve(t, h), bulkheadgrpc.WithConfigName(func(string) string { return "suppliers" }))
	_, err := c.Check(context.Background(), &healthpb.HealthCheckRequest{})
	if status.Code(err) != codes.Internal || !strings.Contains(err.Error(), `unknown config "suppliers"`) {
		t.Errorf("call with an unknown config: %v; want Internal naming the config", err)
	}
	if got := h.received.Load(); got != 0 {
		t.Errorf("the server received %d calls, want 0", got)
	}
}
