package bulkheadgrpc_test

// The tests in this file feed the interceptors hostile names: binary
// metadata that is not UTF-8 or is kilobytes long as a server key, and
// method names that are not UTF-8, empty or huge on a client keyed by
// method. The promises: the bulkhead is the key's, byte for byte; a full
// one rejects with codes.ResourceExhausted, an empty key fails with
// codes.Internal; and every permit comes back (the registry's leak check).

import (
	"context"
	"strings"
	"testing"

	"github.com/rxbulkhead/bulkhead"
	bulkheadgrpc "github.com/rxbulkhead/bulkhead/contrib/grpc"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// Promise (IncomingMetadata, UnaryServerInterceptor, ServerInHandle): a
// call is keyed by the first value of the metadata, whatever its bytes; a
// call that finds its bulkhead full fails with codes.ResourceExhausted,
// one without the metadata (or with an empty value) with codes.Internal.
func TestHostileBinaryMetadataKeysAreBulkheadNamesByteForByte(t *testing.T) {
	for _, side := range []string{"interceptors", "tap handle"} {
		for name, tenant := range map[string]string{"not UTF-8": "\xff\xfe\x00not UTF-8", "4 KB": strings.Repeat("k", 4096)} {
			t.Run(side+"/"+name, func(t *testing.T) {
				reg := newRegistry(t, bulkhead.Config{MaxConcurrentCalls: 1})
				h := newHealthServer(true)
				key := bulkheadgrpc.WithKey(bulkheadgrpc.IncomingMetadata("x-tenant-bin"))
				var addr string
				if side == "interceptors" {
					addr = limitedServer(t, reg, h, key)
				} else {
					in, err := bulkheadgrpc.ServerInHandle(reg, key)
					if err != nil {
						t.Fatal(err)
					}
					addr = serve(t, h, grpc.InTapHandle(in),
						grpc.ChainUnaryInterceptor(bulkheadgrpc.TapUnaryServerInterceptor()))
				}
				c := dial(t, addr)
				ctx := metadata.AppendToOutgoingContext(context.Background(), "x-tenant-bin", tenant)
				first := goCheck(ctx, c)
				h.awaitArrivals(t, 1)
				bh := find(t, reg, tenant)
				if m := bh.Metrics(); m.InFlightCalls != 1 {
					t.Errorf("%d in flight, want 1", m.InFlightCalls)
				}
				if _, err := c.Check(ctx, &healthpb.HealthCheckRequest{}); status.Code(err) != codes.ResourceExhausted {
					t.Errorf("second call: %v, want ResourceExhausted", err)
				}
				h.Release()
				if err := await(t, first); err != nil {
					t.Error(err)
				}
				awaitMetrics(t, bh, "the permit back", func(m bulkhead.Metrics) bool { return m.InFlightCalls == 0 })
				empty := metadata.AppendToOutgoingContext(context.Background(), "x-tenant-bin", "")
				if _, err := c.Check(empty, &healthpb.HealthCheckRequest{}); status.Code(err) != codes.Internal {
					t.Errorf("empty tenant: %v, want Internal", err)
				}
			})
		}
	}
}

// Promise (UnaryClientInterceptor with WithKey(Method)): the call's
// bulkhead is named by its method, whatever its bytes, and the permit is
// given back when the call returns, however the server (or gRPC itself)
// refuses a method that is not UTF-8, empty or 32 KB long.
func TestHostileMethodNamesOnAClientKeyedByMethodGiveThePermitBack(t *testing.T) {
	reg := newRegistry(t, bulkhead.Config{MaxConcurrentCalls: 1})
	addr := serve(t, newHealthServer(false))
	unary, err := bulkheadgrpc.UnaryClientInterceptor(reg, bulkheadgrpc.WithKey(bulkheadgrpc.Method))
	if err != nil {
		t.Fatal(err)
	}
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithChainUnaryInterceptor(unary))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	for name, method := range map[string]string{
		"not UTF-8": "/grpc.health.v1.Health/Check\xff",
		"32 KB":     "/grpc.health.v1.Health/" + strings.Repeat("C", 32<<10),
		"no slash":  "Check",
	} {
		for range 2 { // a permit kept by the first call would refuse the second
			err := cc.Invoke(context.Background(), method, &healthpb.HealthCheckRequest{}, &healthpb.HealthCheckResponse{})
			if err == nil || status.Code(err) == codes.ResourceExhausted {
				t.Errorf("%s: %v, want the server's or gRPC's refusal", name, err)
			}
		}
		if m := find(t, reg, method).Metrics(); m.InFlightCalls != 0 {
			t.Errorf("%s: %d permit(s) held after the calls returned", name, m.InFlightCalls)
		}
	}
	if err := cc.Invoke(context.Background(), "", &healthpb.HealthCheckRequest{}, &healthpb.HealthCheckResponse{}); status.Code(err) != codes.Internal {
		t.Errorf("empty method: %v, want Internal (an empty key)", err)
	}
}
