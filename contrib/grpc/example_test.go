package bulkheadgrpc_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/rxbulkhead/bulkhead"
	bulkheadgrpc "github.com/rxbulkhead/bulkhead/contrib/grpc"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// startHealth serves grpc's own health service on a 127.0.0.1 listener.
func startHealth(opts ...grpc.ServerOption) (addr string, stop func()) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	srv := grpc.NewServer(opts...)
	healthpb.RegisterHealthServer(srv, health.NewServer())
	go srv.Serve(lis)
	return lis.Addr().String(), srv.Stop
}

// A client whose calls to each target go through its own bulkhead.
func ExampleUnaryClientInterceptor() {
	addr, stop := startHealth()
	defer stop()

	reg, _ := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 20})
	limit, err := bulkheadgrpc.UnaryClientInterceptor(reg) // key: the target
	if err != nil {
		panic(err)
	}
	cc, _ := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithChainUnaryInterceptor(limit))
	defer cc.Close()

	resp, err := healthpb.NewHealthClient(cc).Check(context.Background(), &healthpb.HealthCheckRequest{})
	fmt.Println(resp.GetStatus(), err)
	fmt.Println("bulkhead per target:", reg.All()[0].Name() == addr)
	// Output:
	// SERVING <nil>
	// bulkhead per target: true
}

// A stream holds its permit until it ends: here until its context is
// cancelled.
func ExampleStreamClientInterceptor() {
	addr, stop := startHealth()
	defer stop()

	reg, _ := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 1})
	limit, _ := bulkheadgrpc.StreamClientInterceptor(reg, bulkheadgrpc.WithKey(bulkheadgrpc.Service))
	cc, _ := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithChainStreamInterceptor(limit))
	defer cc.Close()
	client := healthpb.NewHealthClient(cc)

	ctx, cancel := context.WithCancel(context.Background())
	watch, _ := client.Watch(ctx, &healthpb.HealthCheckRequest{})
	first, _ := watch.Recv()
	fmt.Println("watching:", first.GetStatus())
	_, err := client.Watch(context.Background(), &healthpb.HealthCheckRequest{})
	fmt.Println("second stream:", status.Code(err), errors.Is(err, bulkhead.ErrBulkheadFull))
	cancel()
	_, err = watch.Recv() // the stream's end gives the permit back
	fmt.Println("after cancel:", status.Code(err))
	// Output:
	// watching: SERVING
	// second stream: ResourceExhausted true
	// after cancel: Canceled
}

// A server that runs at most 100 calls per method at once, 50 more waiting.
func ExampleUnaryServerInterceptor() {
	reg, _ := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 100, MaxWaitDuration: 50 * time.Millisecond, MaxQueuedCalls: 50})
	unary, err := bulkheadgrpc.UnaryServerInterceptor(reg) // key: the full method
	if err != nil {
		panic(err)
	}
	addr, stop := startHealth(grpc.ChainUnaryInterceptor(unary))
	defer stop()

	cc, _ := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	defer cc.Close()
	resp, err := healthpb.NewHealthClient(cc).Check(context.Background(), &healthpb.HealthCheckRequest{})
	fmt.Println(resp.GetStatus(), err)
	fmt.Println(reg.All()[0].Name())
	// Output:
	// SERVING <nil>
	// /grpc.health.v1.Health/Check
}

// A full bulkhead rejects a stream with ResourceExhausted before its
// handler runs.
func ExampleStreamServerInterceptor() {
	reg, _ := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 1})
	stream, _ := bulkheadgrpc.StreamServerInterceptor(reg)
	addr, stop := startHealth(grpc.ChainStreamInterceptor(stream))
	defer stop()
	cc, _ := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	defer cc.Close()
	client := healthpb.NewHealthClient(cc)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	watch, _ := client.Watch(ctx, &healthpb.HealthCheckRequest{})
	watch.Recv() // the first stream runs and holds the only permit
	second, _ := client.Watch(context.Background(), &healthpb.HealthCheckRequest{})
	_, err := second.Recv()
	fmt.Println(status.Code(err) == codes.ResourceExhausted)
	// Output: true
}

// Keying client calls by the partner named in the outgoing metadata.
func ExampleOutgoingMetadata() {
	addr, stop := startHealth()
	defer stop()
	reg, _ := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 5})
	limit, _ := bulkheadgrpc.UnaryClientInterceptor(reg, bulkheadgrpc.WithKey(bulkheadgrpc.OutgoingMetadata("x-partner")))
	cc, _ := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithChainUnaryInterceptor(limit))
	defer cc.Close()

	ctx := metadata.AppendToOutgoingContext(context.Background(), "x-partner", "walmart")
	healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{})
	_, err := healthpb.NewHealthClient(cc).Check(context.Background(), &healthpb.HealthCheckRequest{})
	fmt.Println(reg.All()[0].Name())
	fmt.Println(status.Code(err), err)
	// Output:
	// walmart
	// Internal bulkheadgrpc: the key function returned an empty bulkhead name for /grpc.health.v1.Health/Check
}

// Keying server calls by the tenant the client names.
func ExampleIncomingMetadata() {
	reg, _ := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 5})
	unary, _ := bulkheadgrpc.UnaryServerInterceptor(reg, bulkheadgrpc.WithKey(bulkheadgrpc.IncomingMetadata("x-tenant")))
	addr, stop := startHealth(grpc.ChainUnaryInterceptor(unary))
	defer stop()
	cc, _ := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	defer cc.Close()

	ctx := metadata.AppendToOutgoingContext(context.Background(), "x-tenant", "acme")
	_, err := healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{})
	fmt.Println(err, reg.All()[0].Name())
	// Output: <nil> acme
}

func ExampleMethod() {
	fmt.Println(bulkheadgrpc.Method(context.Background(), "/edi.v1.Inbound/Post"))
	// Output: /edi.v1.Inbound/Post
}

func ExampleService() {
	fmt.Println(bulkheadgrpc.Service(context.Background(), "/edi.v1.Inbound/Post"))
	// Output: edi.v1.Inbound
}

// Big partners get their own configuration.
func ExampleWithConfigName() {
	reg, _ := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 5},
		bulkhead.WithConfig("retailer", bulkhead.Config{MaxConcurrentCalls: 50}))
	_, err := bulkheadgrpc.UnaryClientInterceptor(reg,
		bulkheadgrpc.WithKey(bulkheadgrpc.OutgoingMetadata("x-partner")),
		bulkheadgrpc.WithConfigName(func(partner string) string {
			if partner == "walmart" {
				return "retailer"
			}
			return bulkhead.DefaultConfigName
		}))
	fmt.Println(err)
	// Output: <nil>
}

func ExampleWithKey() {
	reg, _ := bulkhead.NewRegistry(bulkhead.DefaultConfig())
	_, err := bulkheadgrpc.UnaryServerInterceptor(reg, bulkheadgrpc.WithKey(nil))
	fmt.Println(err)
	// Output: bulkheadgrpc: UnaryServerInterceptor: WithKey: key function is nil
}

// A tap handle refuses a call before gRPC creates its stream: while a Watch
// holds the method's only permit, the next Watch gets ResourceExhausted and
// costs the server no stream.
func ExampleServerInHandle() {
	reg, _ := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 1})
	admit, err := bulkheadgrpc.ServerInHandle(reg) // key: the full method
	if err != nil {
		panic(err)
	}
	addr, stop := startHealth(grpc.InTapHandle(admit))
	defer stop()
	cc, _ := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	defer cc.Close()
	client := healthpb.NewHealthClient(cc)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	watch, _ := client.Watch(ctx, &healthpb.HealthCheckRequest{})
	first, _ := watch.Recv()
	fmt.Println("watching:", first.GetStatus())
	second, _ := client.Watch(context.Background(), &healthpb.HealthCheckRequest{})
	_, err = second.Recv()
	fmt.Println("second stream:", status.Code(err))
	// Output:
	// watching: SERVING
	// second stream: ResourceExhausted
}

// The tap handle with its two interceptors: a call's permit comes back
// when its handler returns, before the status is sent, so calls made one
// after the other on a bulkhead of one permit never find it held.
func ExampleTapUnaryServerInterceptor() {
	reg, _ := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 1})
	admit, err := bulkheadgrpc.ServerInHandle(reg)
	if err != nil {
		panic(err)
	}
	addr, stop := startHealth(grpc.InTapHandle(admit),
		grpc.ChainUnaryInterceptor(bulkheadgrpc.TapUnaryServerInterceptor()),
		grpc.ChainStreamInterceptor(bulkheadgrpc.TapStreamServerInterceptor()))
	defer stop()
	cc, _ := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	defer cc.Close()
	client := healthpb.NewHealthClient(cc)

	refused := 0
	for range 100 {
		if _, err := client.Check(context.Background(), &healthpb.HealthCheckRequest{}); status.Code(err) == codes.ResourceExhausted {
			refused++
		}
	}
	fmt.Println("refused:", refused)
	// Output: refused: 0
}

// A client whose calls take the class their context carries
// (bulkhead.WithPriority) in the hub's budget, and send it to the server
// as failsafe-go's x-failsafe-priority metadata, mapped with the hub's own
// class names.
func ExampleWithPriorityClasses() {
	cls := func(name string) bulkhead.ClassConfig {
		return bulkhead.ClassConfig{Name: name, MaxWaitDuration: time.Second, MaxQueuedCalls: bulkhead.Unbounded}
	}
	hub, _ := bulkhead.NewBudget("hub", bulkhead.BudgetConfig{Size: 100, MaxQueuedCalls: bulkhead.Unbounded,
		Classes: []bulkhead.ClassConfig{cls("interactive"), cls("batch")}})
	reg, _ := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 10}, bulkhead.WithBudget(hub, nil))
	classes := bulkhead.PriorityClasses{"batch", "batch", "interactive", "interactive", "interactive"}
	interceptor, _ := bulkheadgrpc.UnaryClientInterceptor(reg, bulkheadgrpc.WithPriorityClasses(classes))

	lis, _ := net.Listen("tcp", "127.0.0.1:0")
	srv := grpc.NewServer(grpc.UnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		fmt.Println("server got priority", metadata.ValueFromIncomingContext(ctx, bulkhead.PriorityMetadataKey))
		return handler(ctx, req)
	}))
	healthpb.RegisterHealthServer(srv, health.NewServer())
	go srv.Serve(lis)
	defer srv.Stop()
	cc, _ := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithUnaryInterceptor(interceptor))
	defer cc.Close()

	ctx := bulkhead.WithPriority(context.Background(), "batch")
	_, err := healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{})
	fmt.Println(err, hub.Metrics().InUse)
	// Output:
	// server got priority [0]
	// <nil> 0
}
