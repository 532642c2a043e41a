package redis_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/testkit"
	"go.uber.org/goleak"

	rxredis "github.com/rxbulkhead/bulkhead/contrib/redis"
)

// childEnv names the role of a re-executed test binary (see child_test.go).
const childEnv = "RXBULKHEAD_REDIS_CHILD"

func TestMain(m *testing.M) {
	// go-redis logs every failed dial; the fault tests fail dials on purpose.
	goredis.SetLogger(quietLogger{})
	if role := os.Getenv(childEnv); role != "" {
		os.Exit(runChild(role))
	}
	// The parallel tests (the Cluster and Sentinel ones, and the process
	// test) run servers and processes of their own and spend their time
	// waiting on them: all four run at once unless -parallel is given (its
	// default, GOMAXPROCS, ran two and made the others wait: 13 s more of
	// make test on 2 cores).
	flag.Parse()
	parallelSet := false
	flag.Visit(func(f *flag.Flag) { parallelSet = parallelSet || f.Name == "test.parallel" })
	if !parallelSet {
		_ = flag.Set("test.parallel", "4")
	}
	if redisServerPath() == "" && os.Getenv("CI") != "" {
		fmt.Fprintf(os.Stderr, "contrib/redis: the server binary ($%s, default redis-server) is not installed and CI is set: run `make redis-server`\n", serverEnv)
		os.Exit(1)
	}
	if redisServerPath() == "" {
		// Not in CI: nothing here can run without a real server.
		fmt.Println("contrib/redis: skipping every test: redis-server is not installed (make redis-server)")
		os.Exit(0)
	}
	if bin := redisServerPath(); bin != "" {
		if out, err := exec.Command(bin, "--version").Output(); err == nil {
			fmt.Printf("contrib/redis: testing against %s", out)
		}
	}
	{
		s, err := startServer()
		if err != nil {
			fmt.Fprintln(os.Stderr, "contrib/redis: starting the shared redis-server:", err)
			os.Exit(1)
		}
		shared = s
	}
	code := m.Run()
	if shared != nil {
		shared.Close()
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

// fastStore is a StoreConfig with short intervals, for tests that wait
// for expiries and polls.
func fastStore() rxredis.StoreConfig {
	return rxredis.StoreConfig{
		LeaseTTL: 2 * time.Second, RenewInterval: 300 * time.Millisecond,
		PollInterval: 50 * time.Millisecond, Timeout: 300 * time.Millisecond, ProbeInterval: 50 * time.Millisecond,
	}
}

// prefixFor is a key prefix of the test's own.
func prefixFor(t testing.TB) string {
	r := strings.NewReplacer("/", ":", " ", "_", "{", "(", "}", ")")
	return "rxbt:" + r.Replace(t.Name()) + ":"
}

// newStore returns a Store over a new client of srv, with the test's own
// key prefix; the Store and client are closed and the keys removed at the
// end of the test.
func newStore(t testing.TB, srv *server, cfg rxredis.StoreConfig) (*rxredis.Store, *goredis.Client) {
	t.Helper()
	c := srv.client(t)
	if cfg.KeyPrefix == "" {
		cfg.KeyPrefix = prefixFor(t)
	}
	flushKeys(t, c, cfg.KeyPrefix)
	s, err := rxredis.NewStore(c, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Store.Close: %v", err)
		}
	})
	return s, c
}

// newBulkhead returns a fleet bulkhead on s whose permits are checked for
// leaks at the end of the test (before the Store closes).
func newBulkhead(t testing.TB, s *rxredis.Store, name string, cfg rxredis.Config) *rxredis.Bulkhead {
	t.Helper()
	b, err := rxredis.NewBulkhead(s, name, cfg)
	if err != nil {
		t.Fatal(err)
	}
	testkit.CheckPermits(t, b)
	return b
}

// fleetConfig is a FailClosed config of permits; a positive wait comes
// with an unbounded queue.
func fleetConfig(permits int, wait time.Duration) rxredis.Config {
	c := rxredis.Config{Config: bulkhead.Config{MaxConcurrentCalls: permits, MaxWaitDuration: wait}}
	if wait > 0 {
		c.MaxQueuedCalls = bulkhead.Unbounded
	}
	return c
}

// await waits for a's outcome, failing the test after outcomeTimeout.
func await(t testing.TB, a *bulkhead.Acquisition) error {
	t.Helper()
	select {
	case <-a.Done():
		return a.Err()
	case <-time.After(outcomeTimeout):
		t.Fatalf("no outcome within %v", outcomeTimeout)
		return nil
	}
}

// eventually polls cond every 10ms until it holds, failing after timeout.
func eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, timeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
