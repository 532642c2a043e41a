package catalog

import "errors"

// The fenced path: for an owner whose items count their own use, under
// their own lock, in a way Sweep's keep func reads (a Semaphore's permits
// in flight and calls queued: bulkhead.Registry's keyed calls). It counts
// no user, so a call costs no atomic write of the catalog at all. Instead:
//
//   - The caller looks the entry up (LookupOrCatchAll), stamps it (Stamp),
//     acts on the item under the item's lock (it takes a permit, or queues),
//     and then asks Kept(e). Kept is one load unless e is dead.
//   - Sweep makes an idle entry dead (CAS of users 0 -> dead: a fenced
//     entry has users 0, a pinned or Entered one more), then calls keep,
//     which reads the item's use under the item's lock, and evicts only if
//     the item is unused; otherwise it makes the entry alive again. All of
//     it under mu.
//   - The item's lock orders the two: if the caller's act came first, keep
//     sees the item in use and the entry stays; if keep came first, the
//     caller's act follows the CAS, so Kept sees the entry dead, waits for
//     mu (the sweep's decision) and reports whether the entry stayed. A
//     caller told false has acted on an evicted item: it undoes its act
//     and starts again (the next lookup finds the name's new entry, or
//     creates one). So a name never has two live items in use at once.
//   - Stamp makes that undo rare: an entry stamped at the current tick is
//     not idle for idleTicks more sweeps, so the sweep that evicts it from
//     under a caller needs the caller to stall for that long between its
//     lookup and its act.

// Lookup returns the live entry named name, or nil, without counting a
// user: one lookup, with no lock and no write to shared memory.
func (c *Catalog[C, B]) Lookup(name string) *Entry[B] {
	if e := c.items.load(name); e != nil && !e.Dead() {
		return e
	}
	return nil
}

// LookupOrCatchAll is EnterOrCatchAll for the fenced path: it returns the
// entry of name (created, without a user, if there is none) or the
// catch-all's, and counts no user. The caller follows the protocol above
// (Stamp, act, Kept).
func (c *Catalog[C, B]) LookupOrCatchAll(name, configName string) (*Entry[B], error) {
	if e := c.items.load(name); e != nil && !e.Dead() {
		return e, nil
	}
	ca := c.catchAll
	if ca != nil && (c.max > 0 && c.counted.Load() >= int64(c.max) || ca.maxNameLen > 0 && len(name) > ca.maxNameLen) {
		c.catchAllCalls.Add(1)
		return ca.entry, nil
	}
	e, err := c.lookupSlow(name, c.configNameFor(name, configName))
	if err != nil && ca != nil && errors.Is(err, ErrFull) {
		c.catchAllCalls.Add(1)
		return ca.entry, nil
	}
	return e, err
}

// lookupSlow is Lookup under the lock, creating the entry if there is none.
func (c *Catalog[C, B]) lookupSlow(name, configName string) (*Entry[B], error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.items.load(name); e != nil {
		return e, nil // not dead: a dead entry is gone or alive again once mu is free
	}
	cfg, err := c.configLocked(name, configName)
	if err != nil {
		return nil, err
	}
	return c.createLocked(name, cfg, 0)
}

// Kept reports whether e, on whose item the caller has just acted, is still
// the live entry of its name. It is one load unless a Sweep has made e
// dead; it then waits for that sweep's decision (the lock) and reports
// whether e stayed.
func (c *Catalog[C, B]) Kept(e *Entry[B]) bool {
	return !e.Dead() || c.keptSlow(e)
}

// keptSlow is Kept for a dead entry: it waits for the sweep's decision.
func (c *Catalog[C, B]) keptSlow(e *Entry[B]) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return !e.Dead() && c.items.load(e.name) == e
}
