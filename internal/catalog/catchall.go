package catalog

import "errors"

// catchAll is the pinned entry that takes the keys a capped catalog turns
// away (SetCatchAllLocked). It is set once, before the catalog is shared,
// and read without a lock after that.
type catchAll[B any] struct {
	name  string
	entry *Entry[B]
	// maxNameLen: a name longer than this that has no item goes to the
	// catch-all rather than become an item (0: no bound).
	maxNameLen int
}

// SetCatchAllLocked stores b, pinned, as the catch-all named name: from then
// on EnterOrCatchAll hands its entry to that name and to every name the cap
// turns away. Call it once, under the lock, before the catalog is used by
// more than one goroutine.
func (c *Catalog[C, B]) SetCatchAllLocked(name string, b B) {
	c.catchAll = &catchAll[B]{name: name, entry: c.PutPinnedLocked(name, b)}
}

// SetMaxNameLenLocked makes EnterOrCatchAll send a name longer than n
// bytes that has no item to the catch-all, so that names cannot grow the
// catalog by their length (0: no bound). Call it after SetCatchAllLocked,
// under the lock, before the catalog is used by more than one goroutine.
func (c *Catalog[C, B]) SetMaxNameLenLocked(n int) { c.catchAll.maxNameLen = n }

// IsCatchAll reports whether name is the catch-all's name.
func (c *Catalog[C, B]) IsCatchAll(name string) bool {
	return c.catchAll != nil && name == c.catchAll.name
}

// EnterOrCatchAll is Enter, except that with a catch-all set, every name
// the cap turns away (ErrFull), and every name with no item that is longer
// than SetMaxNameLenLocked's bound, gets the catch-all's entry, with one
// more user, instead, and is counted in CatchAllCalls; the catch-all's own
// name finds its entry as any other name does. The caller owes one Leave on the
// entry returned. At the cap, a name with no live item goes to the
// catch-all without taking the lock (a flood of new names does not
// serialize on it) and without running SetKeyConfig's func.
func (c *Catalog[C, B]) EnterOrCatchAll(name, configName string) (*Entry[B], error) {
	if e := c.items.load(name); e != nil && e.TryEnter() {
		return e, nil
	}
	ca := c.catchAll
	if ca != nil && (c.max > 0 && c.counted.Load() >= int64(c.max) || ca.maxNameLen > 0 && len(name) > ca.maxNameLen) {
		return c.toCatchAll(ca), nil
	}
	e, err := c.enterSlow(name, c.configNameFor(name, configName))
	if err != nil && ca != nil && errors.Is(err, ErrFull) {
		return c.toCatchAll(ca), nil
	}
	return e, err
}

func (c *Catalog[C, B]) toCatchAll(ca *catchAll[B]) *Entry[B] {
	c.catchAllCalls.Add(1)
	ca.entry.TryEnter() // pinned: always succeeds
	return ca.entry
}

// Live is the number of items, the catch-all included.
func (c *Catalog[C, B]) Live() int {
	n := c.Counted()
	if c.catchAll != nil {
		n++
	}
	return n
}

// CatchAllCalls is the number of EnterOrCatchAll calls the cap sent to the
// catch-all.
func (c *Catalog[C, B]) CatchAllCalls() uint64 { return c.catchAllCalls.Load() }
