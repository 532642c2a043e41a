package bulkheadgrpc_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/tap"

	"github.com/rxbulkhead/bulkhead"
	bulkheadgrpc "github.com/rxbulkhead/bulkhead/contrib/grpc"
	"github.com/rxbulkhead/bulkhead/testkit"
)

func newKeyedRegistry(t *testing.T, cfg bulkhead.Config, opts ...bulkhead.RegistryOption) (*bulkhead.Registry, *testkit.VirtualClock) {
	t.Helper()
	clock := testkit.NewVirtualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	reg, err := bulkhead.NewRegistry(cfg, append([]bulkhead.RegistryOption{bulkhead.WithSemaphoreOptions(bulkhead.WithClock(clock))}, opts...)...)
	require.NoError(t, err)
	testkit.CheckRegistry(t, reg)
	return reg, clock
}

func tenantCtx(tenant string) context.Context {
	return metadata.NewIncomingContext(context.Background(), metadata.Pairs("x-tenant", tenant))
}

func TestServerInterceptorSendsKeysBeyondTheCapToTheCatchAllAndEvictsIdleKeys(t *testing.T) {
	reg, clock := newKeyedRegistry(t, bulkhead.Config{MaxConcurrentCalls: 1},
		bulkhead.WithIdleTimeout(time.Minute), bulkhead.WithMaxBulkheads(2, bulkhead.Config{MaxConcurrentCalls: 1}))
	icpt, err := bulkheadgrpc.UnaryServerInterceptor(reg, bulkheadgrpc.WithKey(bulkheadgrpc.IncomingMetadata("x-tenant")))
	require.NoError(t, err)
	info := &grpc.UnaryServerInfo{FullMethod: "/svc/M"}
	for i := range 5 {
		_, err := icpt(tenantCtx(fmt.Sprint("tenant-", i)), nil, info, func(context.Context, any) (any, error) { return "ok", nil })
		assert.NoError(t, err, "tenant-%d", i)
	}
	assert.Equal(t, bulkhead.RegistryStats{Bulkheads: 3, CatchAllCalls: 3}, reg.Stats())
	clock.Advance(2 * time.Minute)
	assert.Equal(t, bulkhead.RegistryStats{Bulkheads: 1, Evictions: 2, CatchAllCalls: 3}, reg.Stats(), "idle tenants must be evicted")
}

func TestServerInterceptorKeepsTheBulkheadOfARunningHandler(t *testing.T) {
	reg, clock := newKeyedRegistry(t, bulkhead.Config{MaxConcurrentCalls: 1}, bulkhead.WithIdleTimeout(time.Minute))
	icpt, err := bulkheadgrpc.UnaryServerInterceptor(reg, bulkheadgrpc.WithKey(bulkheadgrpc.IncomingMetadata("x-tenant")))
	require.NoError(t, err)
	info := &grpc.UnaryServerInfo{FullMethod: "/svc/M"}
	_, err = icpt(tenantCtx("acme"), nil, info, func(context.Context, any) (any, error) {
		clock.Advance(time.Hour)
		_, err := icpt(tenantCtx("acme"), nil, info, func(context.Context, any) (any, error) { return nil, nil })
		assert.Equal(t, codes.ResourceExhausted, status.Code(err), "a second bulkhead admitted the key while its permit is held")
		return nil, nil
	})
	require.NoError(t, err)
	clock.Advance(time.Hour)
	assert.Equal(t, bulkhead.RegistryStats{Evictions: 1}, reg.Stats())
}

func TestServerInHandleHoldsItsBulkheadUntilTheStreamEnds(t *testing.T) {
	reg, clock := newKeyedRegistry(t, bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Hour, MaxQueuedCalls: 1, QueueOrder: bulkhead.LIFO},
		bulkhead.WithIdleTimeout(time.Minute))
	inHandle, err := bulkheadgrpc.ServerInHandle(reg)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	_, err = inHandle(ctx, &tap.Info{FullMethodName: "/svc/M"})
	require.NoError(t, err)
	clock.Advance(time.Hour)
	assert.Equal(t, 1, reg.Stats().Bulkheads, "evicted while a stream holds its permit")
	// A queued keyed call: ServerInHandle must refuse without queuing (a
	// LIFO queue would evict it).
	a, queued := reg.AcquirePermissionAsync("/svc/M", bulkhead.CallOptions{})
	require.ErrorIs(t, a.Err(), bulkhead.ErrPending)
	_, err = inHandle(context.Background(), &tap.Info{FullMethodName: "/svc/M"})
	assert.Equal(t, codes.ResourceExhausted, status.Code(err))
	assert.ErrorIs(t, a.Err(), bulkhead.ErrPending, "ServerInHandle evicted a queued call")
	cancel()
	require.Eventually(t, func() bool { return a.Err() == nil }, waitTimeout, time.Millisecond)
	queued.FinishCall()
	clock.Advance(time.Hour)
	assert.Equal(t, bulkhead.RegistryStats{Evictions: 1}, reg.Stats())
}

func TestClientInterceptorAdmitsThroughTheKeyedPath(t *testing.T) {
	reg, clock := newKeyedRegistry(t, bulkhead.Config{MaxConcurrentCalls: 1},
		bulkhead.WithIdleTimeout(time.Minute), bulkhead.WithMaxBulkheads(1, bulkhead.Config{MaxConcurrentCalls: 1}))
	icpt, err := bulkheadgrpc.UnaryClientInterceptor(reg, bulkheadgrpc.WithKey(bulkheadgrpc.OutgoingMetadata("x-partner")))
	require.NoError(t, err)
	cc, err := grpc.NewClient("passthrough:///127.0.0.1:1", grpc.WithTransportCredentials(insecure.NewCredentials())) // never dialled: the invoker is a func
	require.NoError(t, err)
	defer cc.Close()
	for _, p := range []string{"a", "b", "c"} {
		ctx := metadata.AppendToOutgoingContext(context.Background(), "x-partner", p)
		err := icpt(ctx, "/svc/M", nil, nil, cc, func(context.Context, string, any, any, *grpc.ClientConn, ...grpc.CallOption) error { return nil })
		assert.NoError(t, err, "partner %s", p)
	}
	assert.Equal(t, bulkhead.RegistryStats{Bulkheads: 2, CatchAllCalls: 2}, reg.Stats())
	clock.Advance(time.Hour)
	assert.Equal(t, bulkhead.RegistryStats{Bulkheads: 1, Evictions: 1, CatchAllCalls: 2}, reg.Stats())
}
