package redis_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// Timeouts of the integration tests: every wait is bounded by one of them.
const (
	serverStartTimeout = 10 * time.Second
	// outcomeTimeout bounds a wait for an outcome that must come.
	outcomeTimeout = 10 * time.Second
)

// server is a redis-server started by the tests on a free loopback port,
// without persistence, in its own temporary directory.
type server struct {
	bin  string
	port int
	dir  string
	args []string
	cmd  *exec.Cmd
}

// serverEnv names the server binary the tests start (a path or a name on
// PATH): redis-server by default, valkey-server for make test-valkey.
const serverEnv = "RXBULKHEAD_REDIS_SERVER"

// redisServerPath finds the server binary ($RXBULKHEAD_REDIS_SERVER, else
// redis-server), or returns "" if it is not installed.
func redisServerPath() string {
	name := os.Getenv(serverEnv)
	if name == "" {
		name = "redis-server"
	}
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	if filepath.Base(name) != name {
		return ""
	}
	for _, dir := range []string{"/usr/bin", "/usr/local/bin", "/usr/sbin"} {
		if p := filepath.Join(dir, name); fileExists(p) {
			return p
		}
	}
	return ""
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// startServer starts a redis-server; extra are more command-line options
// (e.g. "--requirepass", "secret").
func startServer(extra ...string) (*server, error) {
	bin := redisServerPath()
	if bin == "" {
		return nil, fmt.Errorf("redis-server not found (apt-get install redis-server, or make redis-server)")
	}
	dir, err := os.MkdirTemp("", "rxbulkhead-redis-")
	if err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	s := &server{bin: bin, port: port, dir: dir, args: extra}
	if err := s.start(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return s, nil
}

func (s *server) addr() string { return "127.0.0.1:" + strconv.Itoa(s.port) }

func (s *server) start() error {
	args := append([]string{
		"--port", strconv.Itoa(s.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", s.dir, "--logfile", filepath.Join(s.dir, "redis.log"), "--daemonize", "no",
	}, s.args...)
	s.cmd = exec.Command(s.bin, args...)
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := s.cmd.Start(); err != nil {
		return err
	}
	deadline := time.Now().Add(serverStartTimeout)
	for {
		c, err := net.DialTimeout("tcp", s.addr(), 200*time.Millisecond)
		if err == nil {
			c.Close()
			return nil
		}
		if time.Now().After(deadline) {
			s.kill()
			log, _ := os.ReadFile(filepath.Join(s.dir, "redis.log"))
			return fmt.Errorf("redis-server on %s did not start within %v: %v\n%s", s.addr(), serverStartTimeout, err, log)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// kill stops the server at once (SIGKILL): its data is lost.
func (s *server) kill() {
	if s.cmd != nil && s.cmd.Process != nil {
		_ = s.cmd.Process.Signal(syscall.SIGCONT)
		_ = s.cmd.Process.Kill()
		_ = s.cmd.Wait()
		s.cmd = nil
	}
}

// restart kills the server and starts it again on the same port, empty.
func (s *server) restart() error {
	s.kill()
	return s.start()
}

func (s *server) pause()  { _ = s.cmd.Process.Signal(syscall.SIGSTOP) }
func (s *server) resume() { _ = s.cmd.Process.Signal(syscall.SIGCONT) }

func (s *server) close() {
	s.kill()
	os.RemoveAll(s.dir)
}

// client returns a go-redis client of the server, closed at the end of
// the test. Short timeouts, so that a paused server is noticed quickly.
func (s *server) client(t testing.TB, opts ...func(*goredis.Options)) *goredis.Client {
	o := &goredis.Options{Addr: s.addr(), DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second, MaxRetries: -1, DialerRetries: 1}
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
	t.Cleanup(s.close)
	return s
}

// requireServer skips the test when redis-server is missing, unless CI is
// set: then the test fails, so CI cannot pass without the real server.
func requireServer(t testing.TB) {
	t.Helper()
	if redisServerPath() != "" {
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatal("redis-server is not installed and CI is set: run `make redis-server` (apt-get install redis-server)")
	}
	t.Skip("redis-server is not installed (make redis-server installs it)")
}

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
