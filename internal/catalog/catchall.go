package catalog

import "errors"

// catchAll is the pinned entry that takes the keys a capped catalog turns
// away (SetCatchAllLocked). It is set once, before the catalog is shared,
// and read without a lock after that.
type catchAll[B any] struct {
	name  string
	entry *Entry[B]
}

// SetCatchAllLocked stores b, pinned, as the catch-all named name: from then
// on EnterOrCatchAll hands its entry to that name and to every name the cap
// turns away. Call it once, under the lock, before the catalog is used by
// more than one goroutine.
func (c *Catalog[C, B]) SetCatchAllLocked(name string, b B) {
	c.catchAll = &catchAll[B]{name: name, entry: c.PutPinnedLocked(name, b)}
}

// IsCatchAll reports whether name is the catch-all's name.
func (c *Catalog[C, B]) IsCatchAll(name string) bool {
	return c.catchAll != nil && name == c.catchAll.name
}

// EnterOrCatchAll is Enter, except that with a catch-all set, the
// catch-all's name and every name the cap turns away (ErrFull) get the
// catch-all's entry, with one more user, instead; the latter are counted in
// CatchAllCalls. The caller owes one Leave on the entry returned.
func (c *Catalog[C, B]) EnterOrCatchAll(name string, configName func(name string) string, create func(name string, cfg C) (B, error)) (*Entry[B], error) {
	ca := c.catchAll
	if ca != nil && name == ca.name {
		ca.entry.TryEnter() // pinned: always succeeds
		return ca.entry, nil
	}
	e, err := c.Enter(name, configName, create)
	if err != nil && ca != nil && errors.Is(err, ErrFull) {
		c.catchAllCalls.Add(1)
		ca.entry.TryEnter()
		return ca.entry, nil
	}
	return e, err
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
