package bulkheadgrpc_test

import (
	"context"
	"errors"
	"io"
	"net"
	"testing"

	"github.com/rxbulkhead/bulkhead"
	bulkheadgrpc "github.com/rxbulkhead/bulkhead/contrib/grpc"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	testpb "google.golang.org/grpc/interop/grpc_testing"
)

// streamingServer implements the client-streaming and bidirectional calls
// of grpc's own test service: it sums what it receives, or echoes it.
type streamingServer struct {
	testpb.UnimplementedTestServiceServer
}

func (streamingServer) StreamingInputCall(s grpc.ClientStreamingServer[testpb.StreamingInputCallRequest, testpb.StreamingInputCallResponse]) error {
	var total int32
	for {
		req, err := s.Recv()
		if errors.Is(err, io.EOF) {
			return s.SendAndClose(&testpb.StreamingInputCallResponse{AggregatedPayloadSize: total})
		}
		if err != nil {
			return err
		}
		total += int32(len(req.GetPayload().GetBody()))
	}
}

func (streamingServer) FullDuplexCall(s grpc.BidiStreamingServer[testpb.StreamingOutputCallRequest, testpb.StreamingOutputCallResponse]) error {
	for {
		req, err := s.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := s.Send(&testpb.StreamingOutputCallResponse{Payload: req.GetPayload()}); err != nil {
			return err
		}
	}
}

func serveStreaming(t *testing.T) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	testpb.RegisterTestServiceServer(srv, streamingServer{})
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	return lis.Addr().String()
}

func streamingClient(t *testing.T, reg *bulkhead.Registry, addr string) testpb.TestServiceClient {
	t.Helper()
	stream, err := bulkheadgrpc.StreamClientInterceptor(reg)
	if err != nil {
		t.Fatal(err)
	}
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithChainStreamInterceptor(stream))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return testpb.NewTestServiceClient(cc)
}

func TestClientStreamingCallGivesItsPermitBackWithItsResponse(t *testing.T) {
	reg := newRegistry(t, bulkhead.Config{MaxConcurrentCalls: 1})
	addr := serveStreaming(t)
	c := streamingClient(t, reg, addr)
	for range 3 { // the limit is 1: each call must give its permit back
		s, err := c.StreamingInputCall(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for range 3 {
			if err := s.Send(&testpb.StreamingInputCallRequest{Payload: &testpb.Payload{Body: []byte("ISA")}}); err != nil {
				t.Fatal(err)
			}
		}
		resp, err := s.CloseAndRecv()
		if err != nil || resp.GetAggregatedPayloadSize() != 9 {
			t.Fatalf("CloseAndRecv: %v, %v", resp, err)
		}
		// The single response ends the stream: its permit is back before
		// CloseAndRecv returns.
		if m := find(t, reg, addr).Metrics(); m.InFlightCalls != 0 {
			t.Fatalf("after the response: %d in flight, want 0", m.InFlightCalls)
		}
	}
}

func TestBidiStreamHoldsItsPermitUntilTheServerEndsIt(t *testing.T) {
	reg := newRegistry(t, bulkhead.Config{MaxConcurrentCalls: 1})
	addr := serveStreaming(t)
	c := streamingClient(t, reg, addr)
	s, err := c.FullDuplexCall(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, word := range []string{"ISA", "GS", "ST"} {
		if err := s.Send(&testpb.StreamingOutputCallRequest{Payload: &testpb.Payload{Body: []byte(word)}}); err != nil {
			t.Fatal(err)
		}
		if resp, err := s.Recv(); err != nil || string(resp.GetPayload().GetBody()) != word {
			t.Fatalf("echo of %s: %v, %v", word, resp, err)
		}
	}
	if _, err := c.FullDuplexCall(context.Background()); !errors.Is(err, bulkhead.ErrBulkheadFull) {
		t.Errorf("second stream while the first is open: %v, want ErrBulkheadFull", err)
	}
	if err := s.CloseSend(); err != nil {
		t.Fatal(err)
	}
	if m := find(t, reg, addr).Metrics(); m.InFlightCalls != 1 {
		t.Errorf("after CloseSend, before the server's end: %d in flight, want 1", m.InFlightCalls)
	}
	if _, err := s.Recv(); err != io.EOF {
		t.Fatalf("end of stream: %v, want io.EOF", err)
	}
	if m := find(t, reg, addr).Metrics(); m.InFlightCalls != 0 {
		t.Errorf("after io.EOF: %d in flight, want 0", m.InFlightCalls)
	}
}
