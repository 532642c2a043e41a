package redis

import (
	"context"
	"errors"
	"fmt"
	"io"
	"syscall"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// The Store is in one of three states:
//   - up (down false): round trips decide every call;
//   - unreachable (down true, refusal nil): each bulkhead's Policy applies;
//   - refused (down true, refusal set): Redis answers, but with a
//     credentials or ACL error (NOAUTH, WRONGPASS, NOPERM, an
//     unauthenticated connection closed by the server). Every call of
//     every bulkhead is rejected with a *StoreError that names the error
//     (errors.Is ErrRefused), whatever its Policy: a refusal is an answer,
//     not an outage, so FailOver does not admit locally.
//
// Only the dispatcher goroutine changes the state (round, probe), except
// that Close stops it; others read it with one atomic load. While not up,
// the dispatcher probes every ProbeInterval.

// refusalState is the error of the refused state, or of the unreachable
// one (Store.cause).
type refusalState struct{ err error }

// refused reports whether err is Redis refusing the connection or the
// command for its credentials or ACL.
func refused(err error) bool {
	if err == nil {
		return false
	}
	msg := err.Error()
	for _, p := range []string{"NOAUTH", "WRONGPASS", "NOPERM"} {
		if len(msg) >= len(p) && msg[:len(p)] == p {
			return true
		}
	}
	// "ERR Protocol error: unauthenticated multibulk length": Redis closes
	// an unauthenticated connection that sends a long command.
	return containsFold(msg, "unauthenticated")
}

func containsFold(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		match := true
		for j := 0; j < len(sub); j++ {
			c := s[i+j]
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			if c != sub[j] {
				match = false
				break
			}
		}
		if match {
			return true
		}
	}
	return false
}

// refusalError returns the error of a call of b while the Store is in the
// refused state, or nil.
func (s *Store) refusalError(name string) error {
	if r := s.refusal.Load(); r != nil {
		return &StoreError{Name: name, Err: r.err}
	}
	return nil
}

// markDown switches every bulkhead to its Policy (dispatcher goroutine).
func (s *Store) markDown(err error) {
	s.cause.Store(&refusalState{err})
	wasRefused := s.refusal.Swap(nil) != nil
	if s.down.CompareAndSwap(false, true) || wasRefused {
		for _, b := range s.all() {
			b.storeDown(nil)
		}
		s.publishState(StoreDown, err)
	}
}

// markRefused switches to the refused state (dispatcher goroutine): every
// queued call is rejected with err, and so is every call until a probe
// succeeds.
func (s *Store) markRefused(err error) {
	prev := s.refusal.Swap(&refusalState{err})
	wasDown := !s.down.CompareAndSwap(false, true)
	for _, b := range s.all() {
		b.storeDown(err)
	}
	if !wasDown || prev == nil || prev.err.Error() != err.Error() {
		s.publishState(StoreRefused, err)
	}
}

// probe tries Redis once (dispatcher goroutine) and reports whether the
// Store is up again. A PING that fails on a connection the server closed
// (after refusing it) is tried once more on a new one. In the refused
// state a PING is not enough (NOPERM may concern the scripts or the keys):
// the probe also runs the stats script on the keys of every bulkhead.
//
// A ClusterClient is also asked to reload its map of slots: go-redis
// refreshes it only on a MOVED reply or every 10 seconds, so after a
// master's failure it would keep sending a slot's scripts to the dead
// master long after a replica took over.
func (s *Store) probe() bool {
	if cc, ok := s.client.(*goredis.ClusterClient); ok {
		cc.ReloadState(context.Background()) // in the background, once at a time
	}
	err := s.bounded(context.Background(), &s.probing, func(ctx context.Context) error {
		err := s.ping(ctx)
		if err == nil && s.refusal.Load() != nil {
			for _, b := range s.all() {
				if err = statsScript.Run(ctx, s.client, b.keys.list, b.cfg.MaxConcurrentCalls).Err(); err != nil {
					break
				}
			}
		}
		return err
	})
	switch {
	case err == nil:
		s.refusal.Store(nil)
		s.down.Store(false)
		s.publishState(StoreUp, nil)
		return true
	case refused(err):
		s.markRefused(err)
	case s.refusal.Load() != nil && closedByServer(err):
		// The server closes a connection it refused: still refused.
	case unreachable(err):
		s.markDown(err)
	default:
		// Another error reply (say, a key of another type in the refused
		// state's check): Redis answers; the rounds report it per call.
		s.refusal.Store(nil)
		s.down.Store(false)
		s.publishState(StoreUp, nil)
		return true
	}
	return false
}

// ping sends PING until it gets an answer or a stall. A connection that
// the server closed (a restart, a refusal) fails once, and go-redis then
// drops it: without the retries, each probe would find one more stale
// connection of the pool, and the first round trip after a probe that
// passed would fail on the next one.
func (s *Store) ping(ctx context.Context) error {
	err := s.client.Ping(ctx).Err()
	for i := 0; err != nil && closedByServer(err) && ctx.Err() == nil && i <= int(s.client.PoolStats().TotalConns); i++ {
		err = s.client.Ping(ctx).Err()
	}
	return err
}

// closedByServer reports whether err is a connection that the server
// closed or reset (as opposed to a stall, or nothing listening).
func closedByServer(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// StoreEventType is the kind of a StoreEvent.
type StoreEventType uint8

const (
	// StoreDown: Redis could not be reached (Err says how); each
	// bulkhead's Policy applies until StoreUp.
	StoreDown StoreEventType = iota + 1
	// StoreRefused: Redis answered with a credentials or ACL error (Err);
	// every call is rejected with it until StoreUp. Published again when
	// the error changes.
	StoreRefused
	// StoreUp: Redis answers the probe again.
	StoreUp
	// ClientLog: go-redis logged Message about a round trip of this Store
	// (a failed dial during an outage, say); only with Logger installed.
	ClientLog
)

// String returns "down", "refused", "up" or "client-log".
func (t StoreEventType) String() string {
	switch t {
	case StoreDown:
		return "down"
	case StoreRefused:
		return "refused"
	case StoreUp:
		return "up"
	case ClientLog:
		return "client-log"
	}
	return fmt.Sprintf("StoreEventType(%d)", uint8(t))
}

// StoreEvent is a change of the Store's state, or a message of go-redis
// about one of its round trips.
type StoreEvent struct {
	Type    StoreEventType
	Time    time.Time // the real clock
	Err     error     // StoreDown, StoreRefused: what Redis or go-redis said
	Message string    // ClientLog: go-redis's message
}

// String renders the event for logs.
func (e StoreEvent) String() string {
	switch {
	case e.Err != nil:
		return fmt.Sprintf("%s redis store %s: %v", e.Time.Format(time.RFC3339Nano), e.Type, e.Err)
	case e.Message != "":
		return fmt.Sprintf("%s redis store %s: %s", e.Time.Format(time.RFC3339Nano), e.Type, e.Message)
	}
	return fmt.Sprintf("%s redis store %s", e.Time.Format(time.RFC3339Nano), e.Type)
}

// OnEvent registers f to receive the Store's events and returns a func
// that unregisters it. StoreDown, StoreRefused and StoreUp run on the
// dispatcher goroutine (f must not block: no round trip runs meanwhile);
// ClientLog on the goroutine where go-redis logs. A panicking listener is
// recovered and ignored. To close the Store from f, call go s.Close():
// Close waits for the dispatcher, so called on it, it never returns.
func (s *Store) OnEvent(f func(StoreEvent)) (remove func()) {
	if f == nil {
		panic("redis: Store.OnEvent called with a nil listener")
	}
	return s.pub.Add(f)
}

func (s *Store) publishState(t StoreEventType, err error) {
	if s.pub.Active() {
		s.pub.Publish(StoreEvent{Type: t, Time: time.Now(), Err: err})
	}
}
