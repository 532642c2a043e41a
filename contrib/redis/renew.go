package redis

import (
	"context"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// renewLoop is the one renewal loop of the process: every RenewInterval it
// extends every lease and ticket of every bulkhead in one pipelined round
// trip, however many there are. A failed renewal is tried again at the next
// interval; leases live LeaseTTL, so RenewInterval < LeaseTTL/2 leaves room
// for one failure.
func (s *Store) renewLoop() {
	t := time.NewTicker(s.cfg.RenewInterval)
	defer t.Stop()
	for {
		select {
		case <-s.done:
			return
		case <-t.C:
		}
		s.renew()
	}
}

// renewal is what one bulkhead renews: its held leases and its tickets.
type renewal struct {
	b      *Bulkhead
	leases []*Permit
	cmd    *goredis.Cmd
}

func (s *Store) renew() {
	var rs []*renewal
	for _, b := range s.all() {
		if r := b.collectRenewal(); r != nil {
			rs = append(rs, r)
		}
	}
	if len(rs) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.Timeout)
	defer cancel()
	send := func() error {
		_, err := s.client.Pipelined(ctx, func(p goredis.Pipeliner) error {
			for _, r := range rs {
				r.cmd = renewScript.EvalSha(ctx, p, r.b.keys.list, r.args(s)...)
			}
			return nil
		})
		return err
	}
	err := send()
	if goredis.HasErrorPrefix(err, "NOSCRIPT") {
		if loadScripts(ctx, s.client) != nil {
			return
		}
		err = send()
	}
	if err != nil && unreachable(err) {
		return
	}
	for _, r := range rs {
		if v, err := r.cmd.Int64Slice(); err == nil && len(v) == 1+len(r.leases) {
			r.b.applyRenewal(r.leases, v)
		}
	}
}

func (r *renewal) args(s *Store) []any {
	b := r.b
	b.mu.Lock()
	defer b.mu.Unlock()
	args := make([]any, 0, 4+len(r.leases)+b.ticketed)
	args = append(args, b.cfg.MaxConcurrentCalls, s.cfg.LeaseTTL.Milliseconds(), s.cfg.LeaseTTL.Milliseconds(), len(r.leases))
	for _, p := range r.leases {
		args = append(args, s.id(p.n))
	}
	for p := b.qhead; p != nil; p = p.next {
		if p.seq > 0 {
			args = append(args, s.id(p.n))
		}
	}
	return args
}

// collectRenewal lists the leases to renew, or returns nil if the bulkhead
// holds none and queues nothing.
func (b *Bulkhead) collectRenewal() *renewal {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed || (b.held == 0 && b.ticketed == 0) {
		return nil
	}
	r := &renewal{b: b, leases: make([]*Permit, 0, b.held)}
	for p := b.hhead; p != nil; p = p.next {
		if !p.isLocal {
			r.leases = append(r.leases, p)
		}
	}
	return r
}

// applyRenewal records leases found lost or restored; if tickets were
// missing (a restart), the waiters ask again at once.
func (b *Bulkhead) applyRenewal(leases []*Permit, v []int64) {
	b.mu.Lock()
	rerelease := false
	for i, p := range leases {
		if p.state != stHeld {
			if v[1+i] == 1 {
				// Given back while the renewal was on its way: the release
				// ran first and the renewal added the lease back. Release it
				// again (the renewal and the dispatcher use two connections,
				// so Redis may run them in either order).
				b.releases = append(b.releases, p.n)
				rerelease = true
			}
			continue
		}
		switch v[1+i] {
		case 1:
			b.restored++
			p.lost = false
		case 2:
			if !p.lost {
				b.leasesLost++
			}
			p.lost = true
		}
	}
	missing := v[0] > 0
	if missing {
		b.wake = true
	}
	b.mu.Unlock()
	if missing || rerelease {
		b.s.kick()
	}
}
