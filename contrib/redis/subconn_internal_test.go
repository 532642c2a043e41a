package redis

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// The subscription's connection set: what Close relies on to end a
// handshake on a stalled server (subscription).
func TestSubscriptionConnSetClosesWhatItDialedAndRefusesLaterDials(t *testing.T) {
	cs := newConnSet()
	var peers []net.Conn
	dial := cs.dialer(func(context.Context, string, string) (net.Conn, error) {
		c, peer := net.Pipe()
		peers = append(peers, peer)
		return c, nil
	}, 0, nil)
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
	cs2 := newConnSet()
	dial = cs2.dialer(func(context.Context, string, string) (net.Conn, error) {
		c, peer := net.Pipe()
		peers = append(peers, peer)
		cs2.close() // Close runs while this dial is under way
		return c, nil
	}, 0, nil)
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

// close ends a dial under way: the dialer's context is cancelled (a TLS
// handshake of the Store's own dialer waits on it, as this dial does).
func TestSubscriptionConnSetCloseEndsADialUnderWay(t *testing.T) {
	cs := newConnSet()
	started := make(chan struct{})
	dial := cs.dialer(func(ctx context.Context, _, _ string) (net.Conn, error) {
		close(started)
		<-ctx.Done()
		return nil, ctx.Err()
	}, 0, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := dial(ctx, "tcp", "x")
		done <- err
	}()
	<-started
	cs.close()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("a dial under way when the set closed: %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		cancel() // lets the dial end, so that the test stops
		t.Fatal("a dial under way did not end within 10s of the set's close")
	}
}

// isDefaultDialer tells go-redis's default dialer (Options.Dialer nil)
// from any other: only the default is replaced by the Store's own.
func TestIsDefaultDialerTellsGoRedisDefaultFromTheCallers(t *testing.T) {
	mine := func(context.Context, string, string) (net.Conn, error) { return nil, errors.New("unused") }
	for _, tc := range []struct {
		name string
		o    *goredis.Options
		want bool
	}{
		{"no Dialer", &goredis.Options{Addr: "127.0.0.1:1"}, true},
		{"no Dialer, TLS", &goredis.Options{Addr: "127.0.0.1:1", TLSConfig: &tls.Config{}}, true},
		{"the caller's Dialer", &goredis.Options{Addr: "127.0.0.1:1", Dialer: mine}, false},
		{"the caller's Dialer, TLS", &goredis.Options{Addr: "127.0.0.1:1", Dialer: mine, TLSConfig: &tls.Config{}}, false},
	} {
		c := goredis.NewClient(tc.o)
		if got := isDefaultDialer(c.Options().Dialer); got != tc.want {
			t.Errorf("%s: isDefaultDialer = %v, want %v", tc.name, got, tc.want)
		}
		c.Close()
	}
	f := goredis.NewFailoverClient(&goredis.FailoverOptions{MasterName: "m", SentinelAddrs: []string{"127.0.0.1:1"}, TLSConfig: &tls.Config{}})
	defer f.Close()
	if isDefaultDialer(f.Options().Dialer) {
		t.Error("a Sentinel failover client's dialer taken for go-redis's default")
	}
	if isDefaultDialer(nil) {
		t.Error("a nil Dialer taken for go-redis's default")
	}
}
