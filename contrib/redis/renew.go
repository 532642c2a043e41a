package redis

import (
	"context"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// renewLoop is the one renewal loop of the process: every RenewInterval it
// extends every lease of every bulkhead, and every TicketTTL/3 every
// ticket, in one pipelined round trip, however many there are. A failed
// renewal is tried again at the next interval; leases live LeaseTTL, so
// RenewInterval < LeaseTTL/2 leaves room for one failure (a ticket that
// expires anyway only loses its place in the queue: its call asks again).
func (s *Store) renewLoop() {
	every := min(s.cfg.RenewInterval, s.cfg.TicketTTL/3)
	t := time.NewTicker(every)
	defer t.Stop()
	nextLeases := time.Now().Add(s.cfg.RenewInterval)
	for {
		select {
		case <-s.done:
			return
		case <-t.C:
		}
		// Leases are due a little early rather than one tick late.
		leases := !time.Now().Add(every / 2).Before(nextLeases)
		if leases {
			nextLeases = nextLeases.Add(s.cfg.RenewInterval)
			if now := time.Now(); nextLeases.Before(now) {
				nextLeases = now.Add(s.cfg.RenewInterval)
			}
		}
		s.renew(leases)
	}
}

// renewal is what one bulkhead renews: its held leases and its tickets.
type renewal struct {
	b      *Bulkhead
	leases []*Permit
}

func (s *Store) renew(leases bool) {
	var rs []*renewal
	for _, b := range s.all() {
		if r := b.collectRenewal(leases); r != nil {
			rs = append(rs, r)
		}
	}
	if len(rs) == 0 {
		return
	}
	// Arguments are built here, not on the bounded goroutine: they read
	// the bulkheads under their locks.
	args := make([][]any, len(rs))
	for i, r := range rs {
		args[i] = r.args(s)
	}
	replies := make([][]int64, len(rs))
	err := s.boundedLate(context.Background(), &s.renewing, func(ctx context.Context) error {
		cmds := make([]*goredis.Cmd, len(rs))
		send := func() error {
			_, err := s.client.Pipelined(ctx, func(p goredis.Pipeliner) error {
				for i, r := range rs {
					cmds[i] = renewScript.EvalSha(ctx, p, r.b.keys.list, args[i]...)
				}
				return nil
			})
			return err
		}
		err := send()
		if goredis.HasErrorPrefix(err, "NOSCRIPT") {
			if err := loadScripts(ctx, s.client); err != nil {
				return err
			}
			err = send()
		}
		if err != nil && unreachable(err) {
			return err
		}
		for i, c := range cmds {
			if v, err := c.Int64Slice(); err == nil {
				replies[i] = v
			}
		}
		return nil
	}, func() {
		// Abandoned, and run at last: it may have added back leases given
		// back meanwhile.
		for _, r := range rs {
			r.b.giveBackLate(nil, r.leases)
		}
		s.kick()
	})
	if err != nil {
		return // tried again at the next interval
	}
	for i, r := range rs {
		if v := replies[i]; len(v) == 1+len(r.leases) {
			r.b.applyRenewal(r.leases, v)
		}
	}
}

func (r *renewal) args(s *Store) []any {
	b := r.b
	b.mu.Lock()
	defer b.mu.Unlock()
	args := make([]any, 0, 4+len(r.leases)+b.ticketed)
	args = append(args, b.cfg.MaxConcurrentCalls, s.cfg.LeaseTTL.Milliseconds(), s.cfg.TicketTTL.Milliseconds(), len(r.leases))
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

// collectRenewal lists the leases to renew (if leases is set; the tickets
// are always renewed), or returns nil if there is nothing to renew.
func (b *Bulkhead) collectRenewal(leases bool) *renewal {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed || ((!leases || b.held == 0) && b.ticketed == 0) {
		return nil
	}
	r := &renewal{b: b}
	if !leases {
		return r
	}
	r.leases = make([]*Permit, 0, b.held)
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
