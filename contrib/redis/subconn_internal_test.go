package redis

import (
	"context"
	"errors"
	"net"
	"testing"
)

// The subscription's connection set: what Close relies on to end a
// handshake on a stalled server (subscription).
func TestSubscriptionConnSetClosesWhatItDialedAndRefusesLaterDials(t *testing.T) {
	cs := &connSet{conns: make(map[*subConn]struct{})}
	var peers []net.Conn
	dial := cs.dialer(func(context.Context, string, string) (net.Conn, error) {
		c, peer := net.Pipe()
		peers = append(peers, peer)
		return c, nil
	}, nil)
	ctx := context.Background()

	// A connection closed by go-redis (a reconnection) leaves the set.
	c1, err := dial(ctx, "tcp", "x")
	if err != nil {
		t.Fatal(err)
	}
	c1.Close()
	c2, err := dial(ctx, "tcp", "x")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(cs.conns); n != 1 {
		t.Fatalf("%d connections in the set after one of two was closed, want 1", n)
	}
	if c2.(interface{ NetConn() net.Conn }).NetConn() == nil {
		t.Fatal("NetConn returned nil")
	}

	// close closes the open connection: a read blocked on it returns.
	read := make(chan error, 1)
	go func() {
		_, err := c2.Read(make([]byte, 1))
		read <- err
	}()
	cs.close()
	if err := <-read; err == nil {
		t.Fatal("a read on a connection of the closed set returned no error")
	}
	if _, err := dial(ctx, "tcp", "x"); !errors.Is(err, errSubscriptionClosed) {
		t.Fatalf("dial after close: %v, want errSubscriptionClosed", err)
	}

	// A dial that returns after close closes its connection and fails.
	cs2 := &connSet{conns: make(map[*subConn]struct{})}
	dial = cs2.dialer(func(context.Context, string, string) (net.Conn, error) {
		c, peer := net.Pipe()
		peers = append(peers, peer)
		cs2.close() // Close runs while this dial is under way
		return c, nil
	}, nil)
	if _, err := dial(ctx, "tcp", "x"); !errors.Is(err, errSubscriptionClosed) {
		t.Fatalf("dial that returned after close: %v, want errSubscriptionClosed", err)
	}
	last := peers[len(peers)-1]
	if _, err := last.Read(make([]byte, 1)); err == nil {
		t.Fatal("the connection dialed during close is still open (its peer read no EOF)")
	}
	for _, p := range peers {
		p.Close()
	}
}
