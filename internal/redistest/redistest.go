// Package redistest starts redis-server processes for the tests of the
// modules that run against a real server (contrib/redis,
// internal/fleetmetrics): each on a free loopback port, without
// persistence, in a directory of its own, killed with the test process.
// It uses the standard library only, so the core module can hold it.
package redistest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// Env names the server binary the tests start (a path or a name on
// PATH): redis-server by default, valkey-server for make test-valkey.
const Env = "RXBULKHEAD_REDIS_SERVER"

// StartTimeout bounds the start of a server.
const StartTimeout = 10 * time.Second

// Path finds the server binary ($RXBULKHEAD_REDIS_SERVER, else
// redis-server, on PATH or in the usual directories), or returns "" if it
// is not installed.
func Path() string {
	name := os.Getenv(Env)
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
		p := filepath.Join(dir, name)
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return ""
}

// Require skips t when the server binary is missing, unless CI is set:
// then t fails, so that CI cannot pass without the real server.
func Require(t testing.TB) {
	t.Helper()
	if Path() != "" {
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatal("redis-server is not installed and CI is set: run `make redis-server` (apt-get install redis-server)")
	}
	t.Skip("redis-server is not installed (make redis-server installs it)")
}

// FreePort returns a loopback port that nothing listened on at the time
// of the call.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Server is a redis-server process on 127.0.0.1:Port, without
// persistence, with its working directory and log in Dir. Its methods are
// not safe for concurrent use.
type Server struct {
	Bin  string   // the server binary
	Port int      // the port it listens on
	Dir  string   // its working directory, where redis.log is
	Args []string // more command-line options ("--requirepass", "secret")
	cmd  *exec.Cmd
}

// Start starts a server of Path() with extra command-line options on a
// free port, in a new temporary directory that Close removes.
func Start(extra ...string) (*Server, error) {
	bin := Path()
	if bin == "" {
		return nil, fmt.Errorf("redis-server not found (apt-get install redis-server, or make redis-server)")
	}
	dir, err := os.MkdirTemp("", "rxbulkhead-redis-")
	if err != nil {
		return nil, err
	}
	port, err := FreePort()
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	s := &Server{Bin: bin, Port: port, Dir: dir, Args: extra}
	if err := s.Run(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return s, nil
}

// Addr is the server's address, 127.0.0.1:Port.
func (s *Server) Addr() string { return "127.0.0.1:" + strconv.Itoa(s.Port) }

// Run starts the process (again, after Kill) and waits until it accepts
// connections, at most StartTimeout; it fails with the server's log then.
// The process is killed if the test process dies.
func (s *Server) Run() error {
	args := append([]string{
		"--port", strconv.Itoa(s.Port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", s.Dir, "--logfile", filepath.Join(s.Dir, "redis.log"), "--daemonize", "no",
	}, s.Args...)
	s.cmd = exec.Command(s.Bin, args...)
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := s.cmd.Start(); err != nil {
		return err
	}
	deadline := time.Now().Add(StartTimeout)
	for {
		c, err := net.DialTimeout("tcp", s.Addr(), 200*time.Millisecond)
		if err == nil {
			c.Close()
			return nil
		}
		if time.Now().After(deadline) {
			s.Kill()
			log, _ := os.ReadFile(filepath.Join(s.Dir, "redis.log"))
			return fmt.Errorf("%s on %s did not start within %v: %v\n%s", filepath.Base(s.Bin), s.Addr(), StartTimeout, err, log)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Kill stops the server at once (SIGKILL, after a SIGCONT in case it is
// paused): its data is lost. It is idempotent.
func (s *Server) Kill() {
	if s.cmd != nil && s.cmd.Process != nil {
		_ = s.cmd.Process.Signal(syscall.SIGCONT)
		_ = s.cmd.Process.Kill()
		_ = s.cmd.Wait()
		s.cmd = nil
	}
}

// Restart kills the server and starts it again on the same port, empty.
func (s *Server) Restart() error {
	s.Kill()
	return s.Run()
}

// Pause stops the process (SIGSTOP): it holds its connections and answers
// nothing until Resume.
func (s *Server) Pause() { _ = s.cmd.Process.Signal(syscall.SIGSTOP) }

// Resume continues a paused process (SIGCONT).
func (s *Server) Resume() { _ = s.cmd.Process.Signal(syscall.SIGCONT) }

// Close kills the server and removes its directory.
func (s *Server) Close() {
	s.Kill()
	os.RemoveAll(s.Dir)
}
