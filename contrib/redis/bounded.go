package redis

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"
)

// stallError is the error of a round trip that got no answer within
// StoreConfig.Timeout. It matches context.DeadlineExceeded, so unreachable
// counts it as Redis being away.
type stallError struct{ timeout time.Duration }

func (e stallError) Error() string {
	return fmt.Sprintf("no answer within Timeout (%v)", e.timeout)
}

func (e stallError) Unwrap() error { return context.DeadlineExceeded }

// bounded runs f with a context that ends after Timeout, on a goroutine of
// its own, and returns a stallError once Timeout has passed if f has not
// returned by then. go-redis applies context deadlines to socket reads only
// with Options.ContextTimeoutEnabled, and retries by MaxRetries: without
// this, a stalled server (SIGSTOP, a full kernel buffer, a half-open
// connection) holds a round trip for the client's ReadTimeout times its
// retries, whatever Timeout says.
//
// Contract for f: it writes only memory of its own, which the caller reads
// only when bounded returned f's own result (the channel send orders the
// writes before that read); an abandoned f runs on until go-redis gives
// up, holding one connection of the client's pool. busy, if not nil,
// is held while f runs: a caller that finds it held skips its round trip
// (one abandoned probe or renewal at a time, not one per interval).
func (s *Store) bounded(ctx context.Context, busy *atomic.Bool, f func(context.Context) error) error {
	return s.boundedLate(ctx, busy, f, nil)
}

// boundedLate is bounded with late, which runs on f's goroutine if f
// returns after bounded gave up on it: a round trip abandoned on a stalled
// server usually runs when the server resumes, after the round trips that
// followed it, so late gives back by id what it may have granted or
// restored. (A command that the server reads only after go-redis gave up
// on it can still run later: what it grants nobody renews, and its permit
// comes back within LeaseTTL.)
//
// One CAS on state decides between the two endings: the goroutine's
// (0 -> 1, the result is sent) and the caller's timeout (0 -> 2, late runs).
func (s *Store) boundedLate(ctx context.Context, busy *atomic.Bool, f func(context.Context) error, late func()) error {
	if busy != nil && !busy.CompareAndSwap(false, true) {
		return stallError{s.cfg.Timeout}
	}
	parent := ctx
	ctx, cancel := context.WithTimeout(context.WithValue(ctx, storeKey{}, s), s.cfg.Timeout)
	var state atomic.Int32
	done := make(chan error, 1)
	go func() {
		defer cancel()
		err := f(ctx)
		if busy != nil {
			busy.Store(false)
		}
		if state.CompareAndSwap(0, 1) {
			done <- err
		} else if late != nil {
			late()
		}
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		if !state.CompareAndSwap(0, 2) {
			return <-done // f's return (which also cancels ctx) won
		}
		if err := parent.Err(); err != nil {
			return err
		}
		return stallError{s.cfg.Timeout}
	}
}

// storeKey is the context key under which bounded passes the Store to
// go-redis, for Logger.
type storeKey struct{}
