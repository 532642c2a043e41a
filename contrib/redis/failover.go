package redis

import "github.com/rxbulkhead/bulkhead"

// acquireLocal sends p, already in stLocal, to the FailOver semaphore.
func (b *Bulkhead) acquireLocal(p *Permit) {
	la := b.local.AcquirePermissionAsync()
	b.mu.Lock()
	p.local = la
	withdrawn := p.state != stLocal // Cancel ran before p.local was set
	b.mu.Unlock()
	la.OnDone(func(err error) { b.localDone(p, err) })
	if withdrawn {
		la.Cancel() // a grant that won is given back by localDone
	}
}

// waitLocalLocked puts p in stLocal, where Close finds it (b.mu held).
func (b *Bulkhead) waitLocalLocked(p *Permit) {
	p.state = stLocal
	if b.localWaiting == nil {
		b.localWaiting = make(map[*Permit]struct{})
	}
	b.localWaiting[p] = struct{}{}
}

// leaveLocalLocked takes p out of stLocal into state (b.mu held).
func (b *Bulkhead) leaveLocalLocked(p *Permit, state permitState) {
	delete(b.localWaiting, p)
	p.state = state
}

// localDone runs on the goroutine that decided the local acquisition.
func (b *Bulkhead) localDone(p *Permit, err error) {
	b.mu.Lock()
	if p.state != stLocal {
		// Withdrawn (or the Store closed) meanwhile.
		b.mu.Unlock()
		if err == nil {
			b.local.ReleasePermission()
		}
		return
	}
	if err != nil {
		b.leaveLocalLocked(p, stDone)
		b.mu.Unlock()
		r := bulkhead.Unavailable // not the local semaphore's own rejection
		if fe, ok := err.(*bulkhead.FullError); ok {
			r = fe.Reason
		}
		b.reject(p, err, r)
		return
	}
	p.isLocal = true
	delete(b.localWaiting, p)
	b.linkHeldLocked(p)
	b.mu.Unlock()
	b.grant(p)
}
