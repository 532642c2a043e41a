package redis

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"reflect"
	"sync"
	"time"

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
// A dial under way when the Store closes ends too: the dialer's context is
// cancelled by close. go-redis's default dialer makes its TLS handshake
// without the context (tls.DialWithDialer), so with Options.TLSConfig and
// no Dialer of the caller's, the subscription's client dials with a dialer
// of the Store's own that does what go-redis's does (same net.Dialer
// settings, same tls.Config, ServerName inferred from the address by
// crypto/tls in both) but hands the handshake the context (tls.Dialer).
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
	conns := newConnSet()
	switch c := c.(type) {
	case *goredis.Client:
		o := *c.Options()
		dial := o.Dialer
		if isDefaultDialer(dial) {
			dial = nil // the Store's own, which does the same
		}
		o.Dialer = conns.dialer(dial, o.DialTimeout, o.TLSConfig)
		o.PoolSize, o.MinIdleConns, o.MaxIdleConns = 1, 0, 0
		o.PipelinePoolSize = -1
		o.ClientSideCache, o.ClientSideCacheConfig = nil, nil
		o.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
		own := goredis.NewClient(&o)
		return &subscription{ps: own.PSubscribe(ctx), client: own, conns: conns}
	case *goredis.ClusterClient:
		o := *c.Options()
		// ClusterOptions.Dialer stays nil unless the caller set one.
		o.Dialer = conns.dialer(o.Dialer, o.DialTimeout, o.TLSConfig)
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

// defaultDialer is the code of go-redis's default dialer as installed by
// NewClient (Options.init) when Options.Dialer is nil, found once from a
// client that dials nothing.
var defaultDialer = sync.OnceValue(func() uintptr {
	c := goredis.NewClient(&goredis.Options{
		Addr: "127.0.0.1:0", PoolSize: 1,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
	})
	defer c.Close()
	return reflect.ValueOf(c.Options().Dialer).Pointer()
})

// isDefaultDialer reports whether dial is go-redis's default dialer, the
// one NewClient installs when Options.Dialer is nil: its closure's code is
// the same (a Dialer of the caller's is other code). Options() cannot say
// otherwise: NewClient fills Dialer in. If go-redis ever installs it
// differently, this reports false and the subscription keeps go-redis's
// dialer, whose TLS handshake Close cannot cut short (the TLS stall test
// then fails). One false positive: a caller's Dialer copied from another
// client's Options() is that client's default dialer; the Store's
// replacement then uses this client's DialTimeout and TLSConfig.
func isDefaultDialer(dial func(context.Context, string, string) (net.Conn, error)) bool {
	return dial != nil && reflect.ValueOf(dial).Pointer() == defaultDialer()
}

// keepAlive is go-redis v9's default dialer's TCP keep-alive.
var keepAlive = net.KeepAliveConfig{Enable: true, Idle: 30 * time.Second, Interval: 5 * time.Second, Count: 3}

// connSet is the set of open connections of the subscription's client.
type connSet struct {
	// done is cancelled by close, before close takes mu: it ends every
	// dial under way, and once it is, add refuses (it checks under mu, so
	// a connection add recorded is one close's sweep finds).
	done   context.Context
	cancel context.CancelFunc

	mu    sync.Mutex
	conns map[*subConn]struct{}
}

func newConnSet() *connSet {
	done, cancel := context.WithCancel(context.Background())
	return &connSet{done: done, cancel: cancel, conns: make(map[*subConn]struct{})}
}

// dialer wraps dial so that the set records the connections it returns
// and close ends a dial under way (dial gets a context close cancels).
// A nil dial is go-redis's default dialer done here: a net.Dialer with
// timeout and go-redis's keep-alive, and with tlsConfig a TLS handshake
// that ends with the context (tls.Dialer; crypto/tls infers ServerName
// from addr when tlsConfig has none, as for go-redis's tls.DialWithDialer).
func (cs *connSet) dialer(dial func(context.Context, string, string) (net.Conn, error), timeout time.Duration,
	tlsConfig *tls.Config,
) func(context.Context, string, string) (net.Conn, error) {
	if dial == nil {
		nd := &net.Dialer{Timeout: timeout, KeepAliveConfig: keepAlive}
		dial = nd.DialContext
		if tlsConfig != nil {
			dial = (&tls.Dialer{NetDialer: nd, Config: tlsConfig}).DialContext
		}
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if cs.done.Err() != nil {
			return nil, errSubscriptionClosed
		}
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		stop := context.AfterFunc(cs.done, cancel)
		defer stop()
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
	if cs.done.Err() != nil {
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
	cs.cancel()
	cs.mu.Lock()
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
