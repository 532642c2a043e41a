package bulkheadgrpc_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/rxbulkhead/bulkhead"
	bulkheadgrpc "github.com/rxbulkhead/bulkhead/contrib/grpc"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// BenchmarkUnaryPaired measures what the interceptors add to a unary call on
// loopback: each iteration makes one call the bare way and one through the
// interceptor, in alternating order, and reports the median of each and
// their difference in percent (see bulkheadhttp's paired benchmarks for
// why). "client": two connections to one server, one with
// UnaryClientInterceptor; "server": one connection to two servers, one with
// UnaryServerInterceptor; "tap": the same with ServerInHandle; "tap+release":
// with the Tap interceptors beside it.
func BenchmarkUnaryPaired(b *testing.B) {
	reg, err := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 20})
	if err != nil {
		b.Fatal(err)
	}
	clientIC, err := bulkheadgrpc.UnaryClientInterceptor(reg)
	if err != nil {
		b.Fatal(err)
	}
	serverIC, err := bulkheadgrpc.UnaryServerInterceptor(reg)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("client", func(b *testing.B) {
		addr, stop := startHealth()
		defer stop()
		bare, closeBare := benchClient(b, addr)
		defer closeBare()
		limited, closeLimited := benchClient(b, addr, grpc.WithChainUnaryInterceptor(clientIC))
		defer closeLimited()
		pairedCalls(b, bare, limited)
	})
	b.Run("server", func(b *testing.B) {
		bareAddr, stopBare := startHealth()
		defer stopBare()
		limitedAddr, stopLimited := startHealth(grpc.ChainUnaryInterceptor(serverIC))
		defer stopLimited()
		bare, closeBare := benchClient(b, bareAddr)
		defer closeBare()
		limited, closeLimited := benchClient(b, limitedAddr)
		defer closeLimited()
		pairedCalls(b, bare, limited)
	})
	admit, err := bulkheadgrpc.ServerInHandle(reg)
	if err != nil {
		b.Fatal(err)
	}
	for name, opts := range map[string][]grpc.ServerOption{
		"tap":         {grpc.InTapHandle(admit)},
		"tap+release": {grpc.InTapHandle(admit), grpc.ChainUnaryInterceptor(bulkheadgrpc.TapUnaryServerInterceptor())},
	} {
		b.Run(name, func(b *testing.B) {
			bareAddr, stopBare := startHealth()
			defer stopBare()
			limitedAddr, stopLimited := startHealth(opts...)
			defer stopLimited()
			bare, closeBare := benchClient(b, bareAddr)
			defer closeBare()
			limited, closeLimited := benchClient(b, limitedAddr)
			defer closeLimited()
			pairedCalls(b, bare, limited)
		})
	}
}

func benchClient(b *testing.B, addr string, opts ...grpc.DialOption) (healthpb.HealthClient, func()) {
	cc, err := grpc.NewClient(addr, append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}, opts...)...)
	if err != nil {
		b.Fatal(err)
	}
	return healthpb.NewHealthClient(cc), func() { cc.Close() }
}

func pairedCalls(b *testing.B, bare, limited healthpb.HealthClient) {
	ctx := context.Background()
	call := func(c healthpb.HealthClient) time.Duration {
		start := time.Now()
		if _, err := c.Check(ctx, &healthpb.HealthCheckRequest{}); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	call(bare) // the connections
	call(limited)
	var tBare, tLimited []time.Duration
	i := 0
	b.ReportAllocs()
	for b.Loop() {
		if i%2 == 0 {
			tBare = append(tBare, call(bare))
			tLimited = append(tLimited, call(limited))
		} else {
			tLimited = append(tLimited, call(limited))
			tBare = append(tBare, call(bare))
		}
		i++
	}
	slices.Sort(tBare)
	slices.Sort(tLimited)
	mBare, mLimited := tBare[len(tBare)/2], tLimited[len(tLimited)/2]
	b.ReportMetric(float64(mBare.Nanoseconds()), "bare-ns/call")
	b.ReportMetric(float64(mLimited.Nanoseconds()), "bulkhead-ns/call")
	b.ReportMetric(100*(float64(mLimited)/float64(mBare)-1), "overhead-%")
}
