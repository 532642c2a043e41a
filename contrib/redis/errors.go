package redis

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"

	goredis "github.com/redis/go-redis/v9"
)

// ErrUnavailable is the errors.Is target of a rejection because Redis could
// not be reached (FailClosed). It is distinct from bulkhead.ErrBulkheadFull:
// the fleet may well have free permits.
var ErrUnavailable = errors.New("redis: store unavailable")

// ErrRefused is the errors.Is target of a rejection because Redis refused
// the Store's credentials or ACL (NOAUTH, WRONGPASS, NOPERM, or an
// unauthenticated connection closed by the server). A refusal is an
// answer, not an outage: every call is rejected with it, whatever the
// Policy (FailOver does not admit locally), until a probe passes.
var ErrRefused = errors.New("redis: store refused the credentials or ACL")

// ErrClosed is the error of calls rejected because their Store was closed.
var ErrClosed = errors.New("redis: store closed")

// StoreError is the error of a call that Redis did not decide: it could not
// be reached (Unreachable, errors.Is(err, ErrUnavailable)), or it refused
// the request (wrong credentials, a key of another type, ...), which no
// retry will fix.
type StoreError struct {
	Name        string // the bulkhead
	Unreachable bool   // Redis could not be reached in time
	Err         error  // what go-redis or the script returned
}

// Error names the bulkhead, says which kind of failure it was and what to
// check.
func (e *StoreError) Error() string {
	if e.Unreachable {
		return fmt.Sprintf("redis bulkhead %q: redis unreachable: %v", e.Name, e.Err)
	}
	msg := e.Err.Error()
	hint := ""
	switch {
	case strings.HasPrefix(msg, "RXBTYPE "):
		msg = strings.TrimPrefix(msg, "RXBTYPE ")
		hint = " (another program uses this key: delete it or choose another StoreConfig.KeyPrefix)"
	case strings.HasPrefix(msg, "WRONGPASS"), strings.HasPrefix(msg, "NOAUTH"), strings.HasPrefix(msg, "NOPERM"),
		strings.Contains(msg, "unauthenticated"):
		hint = " (check Username/Password of the go-redis client and the ACL of that user)"
	}
	return fmt.Sprintf("redis bulkhead %q: redis refused the request: %s%s", e.Name, msg, hint)
}

// Unwrap returns the underlying error.
func (e *StoreError) Unwrap() error { return e.Err }

// Is reports whether target is ErrUnavailable and Redis was unreachable, or
// ErrRefused and Redis refused the credentials or ACL.
func (e *StoreError) Is(target error) bool {
	switch target {
	case ErrUnavailable:
		return e.Unreachable
	case ErrRefused:
		return !e.Unreachable && refused(e.Err)
	}
	return false
}

// unreachable reports whether err says that Redis could not be reached (as
// opposed to Redis answering with an error).
func unreachable(err error) bool {
	if err == nil || refused(err) {
		return false
	}
	var nr notReplicatedError
	if errors.As(err, &nr) {
		return true
	}
	var re goredis.Error
	if errors.As(err, &re) {
		// LOADING: a restarted server reading its data; CLUSTERDOWN: a
		// cluster whose master of some slot failed and was not replaced
		// yet; READONLY: a master demoted to a replica by a failover. Each
		// passes: treat as away.
		msg := re.Error()
		for _, p := range []string{"LOADING", "MASTERDOWN", "TRYAGAIN", "CLUSTERDOWN", "READONLY"} {
			if strings.HasPrefix(msg, p) {
				return true
			}
		}
		return false
	}
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, goredis.ErrPoolTimeout) ||
		errors.Is(err, goredis.ErrPoolExhausted) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, goredis.ErrClosed)
}

// contextEnded is the error of a call (ChangeConfig, FleetMetrics, Check)
// whose context had already ended when it was made: it sends nothing, and
// it is not a *StoreError, since Redis was not asked.
func contextEnded(name, op string, err error) error {
	return fmt.Errorf("redis bulkhead %q: %s: context ended before the round trip, nothing sent: %w", name, op, err)
}

// endedDuring returns the error of a round trip of op that failed with
// err because the caller's ctx ended meanwhile (wrapping ctx.Err(), not a
// *StoreError: Redis was neither found away nor did it refuse), or nil if
// err is not that. what tells what the round trip may have done.
func endedDuring(ctx context.Context, name, op, what string, err error) error {
	if cerr := ctx.Err(); cerr != nil && errors.Is(err, cerr) {
		return fmt.Errorf("redis bulkhead %q: %s: context ended during the round trip%s: %w", name, op, what, cerr)
	}
	return nil
}

// notReplicatedError is a round trip whose writes fewer than
// StoreConfig.WaitReplicas replicas acknowledged: it counts as Redis being
// unreachable, since a failover could lose its grants.
type notReplicatedError struct {
	got  int64
	want int
	err  error // WAIT's own error, if any
}

func (e notReplicatedError) Error() string {
	if e.err != nil {
		return fmt.Sprintf("WAIT %d failed: %v", e.want, e.err)
	}
	return fmt.Sprintf("%d of WaitReplicas %d replicas acknowledged the grants in time", e.got, e.want)
}
