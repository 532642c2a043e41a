package bulkheadgrpc_test

import (
	"context"
	"runtime"
	"testing"

	"github.com/rxbulkhead/bulkhead"
	bulkheadgrpc "github.com/rxbulkhead/bulkhead/contrib/grpc"
	"github.com/rxbulkhead/bulkhead/testkit"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// User code the interceptors call while they hold a permit (the next
// interceptor or the invoker on a client, the handler on a server) panics,
// or calls runtime.Goexit (t.FailNow in a test's fake): the permit comes
// back every time. No connection is made: the ClientConn is never used.
func TestInterceptorsGiveThePermitBackWhenTheCodeTheyCallPanicsOrExits(t *testing.T) {
	cc, err := grpc.NewClient("127.0.0.1:1", grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	key := bulkheadgrpc.WithKey(func(context.Context, string) string { return "walmart" })
	ends := map[string]func(){
		"panic":  func() { panic("user code") },
		"Goexit": runtime.Goexit,
	}
	calls := map[string]func(reg *bulkhead.Registry, end func()) func(){
		"unary client": func(reg *bulkhead.Registry, end func()) func() {
			i, _ := bulkheadgrpc.UnaryClientInterceptor(reg, key)
			return func() {
				i(context.Background(), "/m", nil, nil, cc, func(context.Context, string, any, any, *grpc.ClientConn, ...grpc.CallOption) error { end(); return nil })
			}
		},
		"stream client": func(reg *bulkhead.Registry, end func()) func() {
			i, _ := bulkheadgrpc.StreamClientInterceptor(reg, key)
			return func() {
				i(context.Background(), &grpc.StreamDesc{}, cc, "/m", func(context.Context, *grpc.StreamDesc, *grpc.ClientConn, string, ...grpc.CallOption) (grpc.ClientStream, error) {
					end()
					return nil, nil
				})
			}
		},
		"unary server": func(reg *bulkhead.Registry, end func()) func() {
			i, _ := bulkheadgrpc.UnaryServerInterceptor(reg, key)
			return func() {
				i(context.Background(), nil, &grpc.UnaryServerInfo{FullMethod: "/m"}, func(context.Context, any) (any, error) { end(); return nil, nil })
			}
		},
		"stream server": func(reg *bulkhead.Registry, end func()) func() {
			i, _ := bulkheadgrpc.StreamServerInterceptor(reg, key)
			return func() {
				i(nil, fakeServerStream{}, &grpc.StreamServerInfo{FullMethod: "/m"}, func(any, grpc.ServerStream) error { end(); return nil })
			}
		},
	}
	for callName, call := range calls {
		for endName, end := range ends {
			t.Run(callName+"/"+endName, func(t *testing.T) {
				reg := newRegistry(t, bulkhead.Config{MaxConcurrentCalls: 1})
				f := call(reg, end)
				for range 3 { // the limit is 1: each call must have given its permit back
					if got := testkit.RunToEnd(f); got == nil {
						t.Fatal("the call returned; want the user code's panic or Goexit to go on")
					}
					bh, _ := reg.Find("walmart")
					if m := bh.Metrics(); m.InFlightCalls != 0 {
						t.Fatalf("%d in flight after the user code's %s, want 0", m.InFlightCalls, endName)
					}
				}
			})
		}
	}
}

// fakeServerStream is a grpc.ServerStream whose context never ends.
type fakeServerStream struct{ grpc.ServerStream }

func (fakeServerStream) Context() context.Context { return context.Background() }
