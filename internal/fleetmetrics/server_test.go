package fleetmetrics_test

import (
	"context"
	"testing"

	goredis "github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/rxbulkhead/bulkhead/internal/redistest"
)

func TestMain(m *testing.M) {
	// go-redis logs every failed dial; the test kills the server on purpose.
	goredis.SetLogger(quietLogger{})
	goleak.VerifyTestMain(m)
}

type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

// startRedis starts a redis-server of the test's own
// ($RXBULKHEAD_REDIS_SERVER, default redis-server: internal/redistest) on
// a free 127.0.0.1 port and stops it at the end of the test. The test is
// skipped if the binary is missing, and fails if CI is set (make test
// installs it).
func startRedis(t *testing.T) *redistest.Server {
	t.Helper()
	redistest.Require(t)
	s, err := redistest.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}
