package redis

import (
	"time"

	"github.com/rxbulkhead/bulkhead"
)

// sinceEpoch is the Clock's time as an offset from b.epoch.
func (b *Bulkhead) sinceEpoch() time.Duration { return b.s.cfg.Clock.Now().Sub(b.epoch) }

func addSaturating(a, d time.Duration) time.Duration {
	if s := a + d; s >= a {
		return s
	}
	return 1<<63 - 1
}

// armTimerLocked makes the bulkhead's one timer fire at deadline (the
// queue is in arrival order, so the head's deadline is the earliest).
func (b *Bulkhead) armTimerLocked(deadline time.Duration) {
	if b.timer != nil {
		b.timer.Stop()
	}
	b.timerGen++
	gen := b.timerGen
	b.timer = b.s.cfg.Clock.AfterFunc(deadline-b.sinceEpoch(), func() { b.onTimer(gen) })
}

// onTimer runs on the Clock's timer goroutine: it rejects the waiters whose
// MaxWaitDuration has passed (WaitTimeout) on this goroutine.
func (b *Bulkhead) onTimer(gen uint64) {
	b.mu.Lock()
	if gen != b.timerGen {
		b.mu.Unlock()
		return
	}
	b.timer = nil
	now := b.sinceEpoch()
	var expired []*Permit
	kick := false
	for p := b.qhead; p != nil && p.deadline() <= now; p = b.qhead {
		b.unlinkQueueLocked(p)
		p.state = stDone
		if p.seq > 0 && !p.inFlight {
			b.withdrawals = append(b.withdrawals, p.n)
			kick = true
		}
		expired = append(expired, p)
	}
	if b.qhead != nil {
		b.armTimerLocked(b.qhead.deadline())
	}
	b.mu.Unlock()
	if kick {
		b.s.kick()
	}
	for _, p := range expired {
		b.reject(p, b.errs().waitTimeout, bulkhead.WaitTimeout)
	}
}
