package bulkheadgrpc_test

import (
	"context"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/rxbulkhead/bulkhead"
	bulkheadgrpc "github.com/rxbulkhead/bulkhead/contrib/grpc"
	"github.com/rxbulkhead/bulkhead/testkit"
)

// budgetedRegistry is a registry joined to a budget with the classes of
// bulkhead.DefaultPriorityClasses (sheddable is the default).
func budgetedRegistry(t *testing.T) (*bulkhead.Registry, *bulkhead.Budget) {
	t.Helper()
	cls := func(name string) bulkhead.ClassConfig {
		return bulkhead.ClassConfig{Name: name, MaxWaitDuration: time.Minute, MaxQueuedCalls: bulkhead.Unbounded}
	}
	b, err := bulkhead.NewBudget("hub", bulkhead.BudgetConfig{Size: 100, MaxQueuedCalls: bulkhead.Unbounded,
		Classes: []bulkhead.ClassConfig{cls("critical"), cls("normal"), cls("sheddable")}})
	require.NoError(t, err)
	testkit.CheckBudget(t, b)
	reg, err := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 10}, bulkhead.WithBudget(b, nil))
	require.NoError(t, err)
	testkit.CheckRegistry(t, reg)
	return reg, b
}

func classesInUse(b *bulkhead.Budget) map[string]int {
	out := map[string]int{}
	for _, c := range b.Metrics().Classes {
		if c.InUse != 0 {
			out[c.Name] = c.InUse
		}
	}
	return out
}

// seen is what the recording service saw of one call while it ran.
type seen struct {
	server, client map[string]int // the classes in use in each budget
	ctx            string         // PriorityFrom of the handler's context
	md             string         // the priority metadata it received
}

// recorder is a Health service that reports, for each Check and Watch,
// the classes the budgets hold and the handler's context's class.
type recorder struct {
	healthpb.UnimplementedHealthServer
	server, client *bulkhead.Budget // client may be nil
	seen           chan seen
}

func (r *recorder) record(ctx context.Context) {
	s := seen{server: classesInUse(r.server), ctx: bulkhead.PriorityFrom(ctx)}
	if r.client != nil {
		s.client = classesInUse(r.client)
	}
	if v := metadata.ValueFromIncomingContext(ctx, bulkhead.PriorityMetadataKey); len(v) > 0 {
		s.md = v[0]
	}
	r.seen <- s
}

func (r *recorder) Check(ctx context.Context, _ *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	r.record(ctx)
	return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, nil
}

func (r *recorder) Watch(_ *healthpb.HealthCheckRequest, s grpc.ServerStreamingServer[healthpb.HealthCheckResponse]) error {
	r.record(s.Context())
	return nil
}

func serveRecorder(t *testing.T, r *recorder, opts ...grpc.ServerOption) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := grpc.NewServer(opts...)
	healthpb.RegisterHealthServer(srv, r)
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	return lis.Addr().String()
}

func (r *recorder) next(t *testing.T) seen {
	t.Helper()
	select {
	case s := <-r.seen:
		return s
	case <-time.After(waitTimeout):
		t.Fatal("no call reached the server")
		return seen{}
	}
}

// TestInterceptorsCarryTheContextsClassAsFailsafeGosMetadata: a client
// whose context carries "critical" sends x-failsafe-priority 3; the server
// interceptors give the call that class and put it in the handler's
// context, for unary calls and streams, over 127.0.0.1.
func TestInterceptorsCarryTheContextsClassAsFailsafeGosMetadata(t *testing.T) {
	serverReg, serverBudget := budgetedRegistry(t)
	clientReg, clientBudget := budgetedRegistry(t)
	unary, err := bulkheadgrpc.UnaryServerInterceptor(serverReg)
	require.NoError(t, err)
	stream, err := bulkheadgrpc.StreamServerInterceptor(serverReg)
	require.NoError(t, err)
	rec := &recorder{server: serverBudget, client: clientBudget, seen: make(chan seen, 1)}
	addr := serveRecorder(t, rec, grpc.UnaryInterceptor(unary), grpc.StreamInterceptor(stream))
	cu, err := bulkheadgrpc.UnaryClientInterceptor(clientReg)
	require.NoError(t, err)
	cs, err := bulkheadgrpc.StreamClientInterceptor(clientReg)
	require.NoError(t, err)
	client := dial(t, addr, grpc.WithUnaryInterceptor(cu), grpc.WithStreamInterceptor(cs))

	ctx := bulkhead.WithPriority(context.Background(), "critical")
	_, err = client.Check(ctx, &healthpb.HealthCheckRequest{})
	require.NoError(t, err)
	s := rec.next(t)
	assert.Equal(t, seen{server: map[string]int{"critical": 1}, client: map[string]int{"critical": 1}, ctx: "critical", md: "3"}, s)

	w, err := client.Watch(bulkhead.WithPriority(context.Background(), "normal"), &healthpb.HealthCheckRequest{})
	require.NoError(t, err)
	s = rec.next(t)
	_, _ = w.Recv() // the end of the stream
	assert.Equal(t, seen{server: map[string]int{"normal": 1}, client: map[string]int{"normal": 1}, ctx: "normal", md: "2"}, s)

	// Metadata the caller set is sent as it is and gives the class.
	md := metadata.AppendToOutgoingContext(context.Background(), bulkhead.PriorityMetadataKey, "0")
	_, err = client.Check(md, &healthpb.HealthCheckRequest{})
	require.NoError(t, err)
	s = rec.next(t)
	assert.Equal(t, seen{server: map[string]int{"sheddable": 1}, client: map[string]int{"sheddable": 1}, ctx: "sheddable", md: "0"}, s)
}

// TestServerIgnoresHostilePriorityMetadata sends raw metadata, valid and
// hostile, to the server interceptor and the tap: a value that is not one
// of failsafe-go's priorities or levels gives the partner's class, and no
// value creates a class or a partner.
func TestServerIgnoresHostilePriorityMetadata(t *testing.T) {
	for _, side := range []string{"interceptor", "tap"} {
		t.Run(side, func(t *testing.T) {
			reg, b := budgetedRegistry(t)
			rec := &recorder{server: b, seen: make(chan seen, 1)}
			var opt grpc.ServerOption
			if side == "tap" {
				h, err := bulkheadgrpc.ServerInHandle(reg)
				require.NoError(t, err)
				opt = grpc.InTapHandle(h)
			} else {
				u, err := bulkheadgrpc.UnaryServerInterceptor(reg)
				require.NoError(t, err)
				opt = grpc.UnaryInterceptor(u)
			}
			client := dial(t, serveRecorder(t, rec, opt))
			for _, tc := range []struct{ key, value, want string }{
				{bulkhead.PriorityMetadataKey, "4", "critical"},
				{bulkhead.PriorityMetadataKey, "2", "normal"},
				{bulkhead.LevelMetadataKey, "399", "critical"},
				{bulkhead.PriorityMetadataKey, "7", ""},
				{bulkhead.PriorityMetadataKey, "+3", ""},
				{bulkhead.PriorityMetadataKey, "critical", ""},
				{bulkhead.LevelMetadataKey, "-1", ""},
				{bulkhead.LevelMetadataKey, "99999999999999999999", ""},
				{bulkhead.PriorityMetadataKey, strings.Repeat("3", 32<<10), ""},
			} {
				ctx := metadata.AppendToOutgoingContext(context.Background(), tc.key, tc.value)
				_, err := client.Check(ctx, &healthpb.HealthCheckRequest{})
				require.NoError(t, err, "%s=%.20q", tc.key, tc.value)
				s := rec.next(t)
				want := tc.want
				if want == "" {
					want = "sheddable"
				}
				assert.Equal(t, map[string]int{want: 1}, s.server, "%s=%.20q: the call's class", tc.key, tc.value)
				assert.Equal(t, tc.want, s.ctx, "%s=%.20q: the handler's context", tc.key, tc.value)
				// The tap gives the permit back when the stream's context
				// ends, which may come after the client has the answer.
				// Wait for both of its halves: FinishCall gives back the
				// budget's permit first, then the bulkhead's, so a budget
				// found free can still have the bulkhead's permit held (and
				// the registry's leak check, after the last call, sees it).
				bh := find(t, reg, healthpb.Health_Check_FullMethodName)
				deadline := time.Now().Add(waitTimeout)
				for b.Metrics().InUse != 0 || bh.Metrics().InFlightCalls != 0 {
					require.True(t, time.Now().Before(deadline), "the permit of the call was not given back")
					runtime.Gosched()
				}
			}
			assert.Equal(t, 1, b.Metrics().Partners, "one method, one partner")
			assert.Len(t, b.Metrics().Classes, 3)
		})
	}
}
