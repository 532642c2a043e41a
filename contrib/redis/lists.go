package redis

// The wait queue and the held list of a Bulkhead: doubly linked through
// Permit.prev and next (a Permit is in at most one), guarded by its mu.

func (b *Bulkhead) linkQueueLocked(p *Permit) {
	p.prev, p.next = b.qtail, nil
	if b.qtail != nil {
		b.qtail.next = p
	} else {
		b.qhead = p
	}
	b.qtail = p
	if p.seq > 0 {
		b.ticketed++
	} else {
		b.fresh++
	}
}

func (b *Bulkhead) unlinkQueueLocked(p *Permit) {
	if p.prev != nil {
		p.prev.next = p.next
	} else {
		b.qhead = p.next
	}
	if p.next != nil {
		p.next.prev = p.prev
	} else {
		b.qtail = p.prev
	}
	p.prev, p.next = nil, nil
	if p.seq > 0 {
		b.ticketed--
	} else {
		b.fresh--
	}
	if b.qhead == nil && b.timer != nil {
		b.timer.Stop()
		b.timer = nil
		b.timerGen++
	}
}

func (b *Bulkhead) linkHeldLocked(p *Permit) {
	p.state = stHeld
	p.at = b.sinceEpoch() // grantedAt
	p.prev, p.next = b.htail, nil
	if b.htail != nil {
		b.htail.next = p
	} else {
		b.hhead = p
	}
	b.htail = p
	b.held++
}

func (b *Bulkhead) unlinkHeldLocked(p *Permit) {
	if p.prev != nil {
		p.prev.next = p.next
	} else {
		b.hhead = p.next
	}
	if p.next != nil {
		p.next.prev = p.prev
	} else {
		b.htail = p.prev
	}
	p.prev, p.next = nil, nil
	b.held--
}
