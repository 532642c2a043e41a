package redis

import (
	"context"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// subscribe is the subscriber goroutine: one PSUBSCRIBE on the release
// channels of every bulkhead under the key prefix. A message wakes the
// waiters of the bulkhead it names; after a broken connection every
// bulkhead is woken, since messages may have been lost meanwhile (the poll
// timer covers losses that nobody notices).
func (s *Store) subscribe(ctx context.Context, ps *goredis.PubSub) {
	// PSubscribe on ps (not on the client) so that NewStore does no I/O;
	// go-redis subscribes again by itself after a reconnection.
	if err := ps.PSubscribe(ctx, channelPattern(s.cfg.KeyPrefix)); err != nil && ctx.Err() != nil {
		return
	}
	for {
		msg, err := ps.ReceiveMessage(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			for _, b := range s.all() {
				b.setWake()
			}
			s.kick()
			t := time.NewTimer(s.cfg.ProbeInterval)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
			continue
		}
		name, change := strings.CutPrefix(msg.Payload, configPayload)
		s.mu.Lock()
		b := s.bulkheads[name]
		s.mu.Unlock()
		if b != nil {
			if change {
				b.setRefresh()
			} else {
				b.setWake()
			}
			s.kick()
		}
	}
}
