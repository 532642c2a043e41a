package fleetmetrics_test

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// go-redis logs every failed dial; the test kills the server on purpose.
	goredis.SetLogger(quietLogger{})
	goleak.VerifyTestMain(m)
}

type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

// serverStartTimeout bounds the start of the redis-server.
const serverStartTimeout = 10 * time.Second

// redisServer is a redis-server started by a test on a free 127.0.0.1
// port, without persistence, in a temporary directory.
type redisServer struct {
	addr string
	cmd  *exec.Cmd
}

// startRedis starts $RXBULKHEAD_REDIS_SERVER (default redis-server) and
// kills it at the end of the test. The test is skipped if the binary is
// missing, and fails if CI is set (make test installs it).
func startRedis(t *testing.T) *redisServer {
	t.Helper()
	name := os.Getenv("RXBULKHEAD_REDIS_SERVER")
	if name == "" {
		name = "redis-server"
	}
	bin, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is not installed and CI is set: run `make redis-server`", name)
		}
		t.Skipf("%s is not installed (make redis-server)", name)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	dir := t.TempDir()
	s := &redisServer{addr: "127.0.0.1:" + strconv.Itoa(port)}
	s.cmd = exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", dir, "--logfile", filepath.Join(dir, "redis.log"), "--daemonize", "no")
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.kill)
	deadline := time.Now().Add(serverStartTimeout)
	for {
		c, err := net.DialTimeout("tcp", s.addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			return s
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(dir, "redis.log"))
			t.Fatalf("%s on %s did not start within %v: %v\n%s", name, s.addr, serverStartTimeout, err, log)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// kill stops the server at once; it is idempotent.
func (s *redisServer) kill() {
	if s.cmd.ProcessState != nil {
		return
	}
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
}
