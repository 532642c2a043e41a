package redis

import (
	"context"
	"errors"
	"net"
	"sync"

	goredis "github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// subscription is the Store's pub/sub: one PubSub over a go-redis client
// of the Store's own, built from the options of the caller's client, whose
// connections the Store can close at any moment.
//
// Why a client of its own: go-redis connects a PubSub (dial, HELLO, AUTH,
// the PSUBSCRIBE) while holding the PubSub's mutex, and that handshake
// ignores the context's cancellation (and its deadline too, without
// Options.ContextTimeoutEnabled): on a server that stalls before the
// subscription has connected, PubSub.Close waits for the mutex up to the
// client's ReadTimeout. Through the caller's client the Store cannot reach
// the connection. Through its own, its Dialer records every connection
// (conns), and close closes them: the blocked read fails at once, the
// handshake returns, and PubSub.Close gets the mutex.
//
// Invariant: once conns is closed, no connection of the subscription stays
// open: a dial that returns afterwards closes its connection itself and
// fails (connSet.add decides under its mutex).
type subscription struct {
	ps     *goredis.PubSub
	client interface{ Close() error } // the Store's own client; nil: ps is the caller's client's
	conns  *connSet
}

// newSubscription returns the Store's PubSub, not yet subscribed (no I/O).
// For a *goredis.Client (Sentinel's failover client included) and a
// *goredis.ClusterClient it builds a client of the Store's own with the
// same options (address or Sentinel, TLS, credentials, timeouts, Dialer),
// except: one connection at most, no client-side cache, no maintenance
// notifications, no pipeline pool, and the Dialer wrapped to record its
// connections. Any other UniversalClient subscribes through itself.
func newSubscription(ctx context.Context, c goredis.UniversalClient) *subscription {
	conns := &connSet{conns: make(map[*subConn]struct{})}
	switch c := c.(type) {
	case *goredis.Client:
		o := *c.Options()
		o.Dialer = conns.dialer(o.Dialer, &o)
		o.PoolSize, o.MinIdleConns, o.MaxIdleConns = 1, 0, 0
		o.PipelinePoolSize = -1
		o.ClientSideCache, o.ClientSideCacheConfig = nil, nil
		o.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
		own := goredis.NewClient(&o)
		return &subscription{ps: own.PSubscribe(ctx), client: own, conns: conns}
	case *goredis.ClusterClient:
		o := *c.Options()
		no := goredis.Options{DialTimeout: o.DialTimeout, TLSConfig: o.TLSConfig}
		o.Dialer = conns.dialer(o.Dialer, &no)
		o.PoolSize, o.MinIdleConns, o.MaxIdleConns = 1, 0, 0
		o.PipelinePoolSize = -1
		o.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
		own := goredis.NewClusterClient(&o)
		return &subscription{ps: own.PSubscribe(ctx), client: own, conns: conns}
	}
	return &subscription{ps: c.PSubscribe(ctx), conns: conns}
}

// close ends the subscription: it closes its connections (a read or
// handshake under way fails at once), then the PubSub, then the Store's
// own client. Called once, by the Store's closer goroutine, after the
// subscriber's context is cancelled.
func (sub *subscription) close() {
	sub.conns.close()
	_ = sub.ps.Close()
	if sub.client != nil {
		_ = sub.client.Close()
	}
}

// errSubscriptionClosed is what a dial of the subscription's client
// returns once the Store closes.
var errSubscriptionClosed = errors.New("redis: the Store's subscription is closed")

// connSet is the set of open connections of the subscription's client.
type connSet struct {
	mu     sync.Mutex
	closed bool
	conns  map[*subConn]struct{}
}

// dialer wraps dial (nil: go-redis's default dialer for o) so that the set
// records the connections it returns.
func (cs *connSet) dialer(dial func(context.Context, string, string) (net.Conn, error), o *goredis.Options,
) func(context.Context, string, string) (net.Conn, error) {
	if dial == nil {
		dial = goredis.NewDialer(o)
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		cs.mu.Lock()
		closed := cs.closed
		cs.mu.Unlock()
		if closed {
			return nil, errSubscriptionClosed
		}
		nc, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return cs.add(nc)
	}
}

// add records nc, or closes it if the set is closed already (the Store
// closed during the dial).
func (cs *connSet) add(nc net.Conn) (net.Conn, error) {
	c := &subConn{Conn: nc, set: cs}
	cs.mu.Lock()
	if cs.closed {
		cs.mu.Unlock()
		_ = nc.Close()
		return nil, errSubscriptionClosed
	}
	cs.conns[c] = struct{}{}
	cs.mu.Unlock()
	return c, nil
}

// close closes every open connection and makes later dials fail.
func (cs *connSet) close() {
	cs.mu.Lock()
	cs.closed = true
	open := make([]*subConn, 0, len(cs.conns))
	for c := range cs.conns {
		open = append(open, c)
	}
	clear(cs.conns)
	cs.mu.Unlock()
	for _, c := range open {
		_ = c.Conn.Close()
	}
}

// subConn is a connection of the subscription's client: closing it
// removes it from its set.
type subConn struct {
	net.Conn
	set *connSet
}

func (c *subConn) Close() error {
	c.set.mu.Lock()
	delete(c.set.conns, c)
	c.set.mu.Unlock()
	return c.Conn.Close()
}

// NetConn returns the connection dialed, as crypto/tls.Conn's does: go-redis
// unwraps it to peek at the socket for pending push notifications.
func (c *subConn) NetConn() net.Conn { return c.Conn }
