package redis_test

import (
	"context"
	"net"
	"os"
	"strconv"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/rxbulkhead/bulkhead/internal/redistest"
)

// Timeouts of the integration tests: every wait is bounded by one of them.
const (
	serverStartTimeout = redistest.StartTimeout
	// outcomeTimeout bounds a wait for an outcome that must come.
	outcomeTimeout = 10 * time.Second
)

// server is a redis-server started by the tests (internal/redistest), with
// a client for the tests.
type server struct{ *redistest.Server }

// serverEnv names the server binary the tests start (redistest.Env).
const serverEnv = redistest.Env

// redisServerPath finds the server binary, or returns "" if it is not
// installed.
func redisServerPath() string { return redistest.Path() }

func freePort() (int, error) { return redistest.FreePort() }

// startServer starts a redis-server; extra are more command-line options
// (e.g. "--requirepass", "secret").
func startServer(extra ...string) (*server, error) {
	s, err := redistest.Start(extra...)
	if err != nil {
		return nil, err
	}
	return &server{s}, nil
}

// client returns a go-redis client of the server, closed at the end of
// the test. Short timeouts, so that a paused server is noticed quickly.
func (s *server) client(t testing.TB, opts ...func(*goredis.Options)) *goredis.Client {
	o := &goredis.Options{Addr: s.Addr(), DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second, MaxRetries: -1, DialerRetries: 1}
	for _, f := range opts {
		f(o)
	}
	c := goredis.NewClient(o)
	t.Cleanup(func() { c.Close() })
	return c
}

// withServer starts a server of the test's own (for fault tests that stop
// it), stopped at the end of the test.
func withServer(t testing.TB, extra ...string) *server {
	t.Helper()
	requireServer(t)
	s, err := startServer(extra...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// requireServer skips the test when redis-server is missing, unless CI is
// set: then the test fails, so CI cannot pass without the real server.
func requireServer(t testing.TB) { redistest.Require(t) }

// shared is the server of the tests that do not stop it, started by
// TestMain (nil when redis-server is missing).
var shared *server

func sharedServer(t testing.TB) *server {
	t.Helper()
	requireServer(t)
	if shared == nil {
		t.Fatal("the shared redis-server did not start (see TestMain's output)")
	}
	return shared
}

// flushKeys removes the keys under prefix at the end of the test.
func flushKeys(t testing.TB, c *goredis.Client, prefix string) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		keys, _ := c.Keys(ctx, prefix+"*").Result()
		if len(keys) > 0 {
			c.Del(ctx, keys...)
		}
	})
}

func netListen(port int) (net.Listener, error) {
	return net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
}

// soakEnv multiplies the load duration of the process, Cluster, failover
// and ChangeConfig tests (make soak-redis).
const soakEnv = "RXBULKHEAD_REDIS_SOAK"

// soak returns d × $RXBULKHEAD_REDIS_SOAK (1 if unset or invalid).
func soak(d time.Duration) time.Duration {
	if n, err := strconv.Atoi(os.Getenv(soakEnv)); err == nil && n > 1 {
		return d * time.Duration(n)
	}
	return d
}
