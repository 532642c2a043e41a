package redistest_test

import (
	"bufio"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/rxbulkhead/bulkhead/internal/redistest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// ping sends PING over a plain connection and returns the reply line.
func ping(t *testing.T, addr string) (string, error) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(redistest.StartTimeout))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return "", err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	return strings.TrimSpace(line), err
}

// A started server answers on its address, comes back empty on the same
// port after Restart, refuses connections after Kill, and Close removes
// its directory.
func TestAServerAnswersRestartsOnItsPortAndIsGoneAfterClose(t *testing.T) {
	redistest.Require(t)
	s, err := redistest.Start("--requirepass", "")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got, err := ping(t, s.Addr()); got != "+PONG" {
		t.Fatalf("PING: %q, %v", got, err)
	}
	port := s.Port
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	if got, err := ping(t, s.Addr()); got != "+PONG" || s.Port != port {
		t.Fatalf("after Restart on port %d (was %d): PING %q, %v", s.Port, port, got, err)
	}
	s.Kill()
	s.Kill() // idempotent
	if _, err := ping(t, s.Addr()); err == nil {
		t.Error("PING answered after Kill")
	}
	s.Close()
	if _, err := os.Stat(s.Dir); !os.IsNotExist(err) {
		t.Errorf("directory %s after Close: %v", s.Dir, err)
	}
}
