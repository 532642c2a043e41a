package bulkhead

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"
)

// BudgetConfig is the configuration of a Budget. As for every limit of this
// module, zero means none: no share, no headroom, no wait, no queue, no
// bypass; no bound is written with Unbounded and NoTimeout.
type BudgetConfig struct {
	// Size is the number of permits the budget has. It must be at least 1.
	Size int
	// Classes are the priority classes, highest priority first (for
	// example critical, normal, sheddable). There must be at least one, and
	// their names must be distinct and not empty. A live budget may change
	// their settings and order and gain classes (ChangeConfig), but not
	// lose one.
	Classes []ClassConfig
	// DefaultClass names the class of calls that name none (a zero Class).
	// Empty means the last class: unlabelled calls never outrank labelled
	// ones.
	DefaultClass string
	// Groups are guaranteed shares for a partner or a set of partners (a
	// partner joins its group with PartnerOptions.Group). Their names must
	// be distinct and not empty. A partner in no group has no share and no
	// limit but the budget's.
	Groups []GroupConfig
	// MaxQueuedCalls bounds the calls waiting in the budget, all classes
	// together. When it is reached, a newcomer evicts the newest waiter of
	// the lowest class below its own (Evicted), or is rejected (QueueFull)
	// if no class below its own has a waiter. Zero means no queue, which
	// is only valid if no class waits; Unbounded means no bound.
	MaxQueuedCalls int
	// MaxBypass is how many permits calls behind a waiting call that does
	// not fit (a weighted call short of permits) may take before permits
	// given back are kept for it. Zero means none: a call that does not
	// fit holds back every call behind it, as x/sync/semaphore does. See
	// docs/design.md, "Weighted calls: bounded bypass", for the bound it
	// gives.
	MaxBypass int
}

// ClassConfig is one priority class of a Budget.
type ClassConfig struct {
	// Name identifies the class (Budget.Class, events, errors).
	Name string
	// Share is the number of permits the class is guaranteed: while it
	// holds fewer, its waiters go before those of every class that holds
	// its share, whatever their priority. Unused, the share is lent to the
	// other classes and comes back at the next permits given back. The
	// shares of all classes must add up to at most Size.
	Share int
	// Headroom is the number of permits kept free for bursts of this class
	// and the classes above it: calls of lower classes never take the last
	// Headroom free permits, except for what they still miss of their own
	// Share.
	Headroom int
	// MaxWaitDuration is how long a call of the class may wait in the
	// budget (measured from the moment it asks the budget, after its
	// partner's permit). Zero means never wait (NoWait); NoTimeout waits
	// without bound. A change applies to the calls already waiting.
	MaxWaitDuration time.Duration
	// MaxQueuedCalls bounds the calls of the class waiting in the budget;
	// a newcomer beyond it is rejected (QueueFull). Zero means no queue,
	// which is only valid with a MaxWaitDuration of zero; Unbounded means
	// no bound.
	MaxQueuedCalls int
}

// GroupConfig is a guaranteed share of a Budget for the partners that join
// the group, in the model of Kubernetes API Priority and Fairness: a nominal
// share, part of which is lent while unused, and a limit on borrowing.
type GroupConfig struct {
	// Name identifies the group (PartnerOptions.Group).
	Name string
	// Nominal is the number of permits the group is guaranteed: while it
	// holds fewer, its waiters go first within their class. The nominal
	// shares of all groups must add up to at most Size.
	Nominal int
	// Lendable is how many of the Nominal permits other partners may use
	// while the group does not; it must be between 0 and Nominal. The rest,
	// Nominal - Lendable, is reserved: kept free for the group while it
	// holds fewer than that.
	Lendable int
	// BorrowingLimit is how many permits beyond Nominal the group may hold
	// (out of the unreserved permits and what others lend). Zero means
	// none: the group holds at most Nominal; Unbounded means no limit.
	// Nominal + BorrowingLimit must be at least 1.
	BorrowingLimit int
}

// Validate returns nil if c is valid. Otherwise it reports every invalid
// field, in field order: one *ConfigError, or several joined with
// errors.Join (errors.As finds the first). Field names a class or group by
// its index, e.g. "Classes[2].Share".
func (c BudgetConfig) Validate() error {
	var errs []error
	bad := func(field string, value any, rule string) {
		errs = append(errs, &ConfigError{Field: field, Value: value, Rule: rule})
	}
	if c.Size < 1 {
		bad("Size", c.Size, "must be >= 1")
	}
	if len(c.Classes) == 0 {
		bad("Classes", 0, "must list at least one class")
	}
	shares, headroom, waits := 0, 0, false
	seen := map[string]bool{}
	for i, cl := range c.Classes {
		f := fmt.Sprintf("Classes[%d].", i)
		switch {
		case cl.Name == "":
			bad(f+"Name", cl.Name, "must not be empty")
		case seen[cl.Name]:
			bad(f+"Name", cl.Name, "must differ from the other classes' names")
		}
		seen[cl.Name] = true
		if cl.Share < 0 {
			bad(f+"Share", cl.Share, "must be >= 0")
		}
		if cl.Headroom < 0 {
			bad(f+"Headroom", cl.Headroom, "must be >= 0")
		}
		if cl.MaxWaitDuration < 0 {
			bad(f+"MaxWaitDuration", cl.MaxWaitDuration, "must be >= 0")
		}
		switch {
		case cl.MaxQueuedCalls < 0:
			bad(f+"MaxQueuedCalls", cl.MaxQueuedCalls, "must be >= 0")
		case cl.MaxWaitDuration > 0 && cl.MaxQueuedCalls == 0:
			bad(f+"MaxQueuedCalls", cl.MaxQueuedCalls, "must be >= 1 when MaxWaitDuration is positive (bulkhead.Unbounded for no bound)")
		}
		shares = satAdd(shares, max(cl.Share, 0))
		headroom = satAdd(headroom, max(cl.Headroom, 0))
		waits = waits || cl.MaxWaitDuration > 0
	}
	if c.Size >= 1 && shares > c.Size {
		bad("Classes", shares, fmt.Sprintf("shares must add up to at most Size (%d)", c.Size))
	}
	if c.DefaultClass != "" && !seen[c.DefaultClass] {
		bad("DefaultClass", c.DefaultClass, "must name one of Classes (empty: the last class)")
	}
	nominal, reserved := 0, 0
	seenGroup := map[string]bool{}
	for i, g := range c.Groups {
		f := fmt.Sprintf("Groups[%d].", i)
		switch {
		case g.Name == "":
			bad(f+"Name", g.Name, "must not be empty")
		case seenGroup[g.Name]:
			bad(f+"Name", g.Name, "must differ from the other groups' names")
		}
		seenGroup[g.Name] = true
		if g.Nominal < 0 {
			bad(f+"Nominal", g.Nominal, "must be >= 0")
		}
		if g.Lendable < 0 || g.Lendable > max(g.Nominal, 0) {
			bad(f+"Lendable", g.Lendable, fmt.Sprintf("must be between 0 and Nominal (%d)", g.Nominal))
		}
		switch {
		case g.BorrowingLimit < 0:
			bad(f+"BorrowingLimit", g.BorrowingLimit, "must be >= 0")
		case g.Nominal <= 0 && g.BorrowingLimit == 0:
			bad(f+"BorrowingLimit", g.BorrowingLimit, "must be >= 1 when Nominal is 0, or the group can run nothing (bulkhead.Unbounded for no limit)")
		}
		nominal = satAdd(nominal, max(g.Nominal, 0))
		reserved = satAdd(reserved, max(g.Nominal-max(g.Lendable, 0), 0))
	}
	if c.Size >= 1 && nominal > c.Size {
		bad("Groups", nominal, fmt.Sprintf("nominal shares must add up to at most Size (%d)", c.Size))
	}
	if c.Size >= 1 && nominal <= c.Size && satAdd(reserved, headroom) > c.Size {
		bad("Groups", reserved, fmt.Sprintf("reserved permits (Nominal - Lendable) and the classes' headroom (%d) must add up to at most Size (%d)", headroom, c.Size))
	}
	switch {
	case c.MaxQueuedCalls < 0:
		bad("MaxQueuedCalls", c.MaxQueuedCalls, "must be >= 0")
	case waits && c.MaxQueuedCalls == 0:
		bad("MaxQueuedCalls", c.MaxQueuedCalls, "must be >= 1 when a class waits (bulkhead.Unbounded for no bound)")
	}
	if c.MaxBypass < 0 {
		bad("MaxBypass", c.MaxBypass, "must be >= 0")
	}
	switch len(errs) {
	case 0:
		return nil
	case 1:
		return errs[0]
	}
	return errors.Join(errs...)
}

// validateFor is Validate with the budget's name in every error.
func (c BudgetConfig) validateFor(name string) error {
	err := c.Validate()
	for _, e := range configErrors(err) {
		e.Name = name
	}
	return err
}

// clone returns a copy of c that shares no slice with it, so that the
// caller may reuse its slices.
func (c BudgetConfig) clone() BudgetConfig {
	c.Classes = slices.Clone(c.Classes)
	c.Groups = slices.Clone(c.Groups)
	return c
}

// satAdd returns a+b for non-negative a and b, saturating at math.MaxInt
// (Unbounded) instead of wrapping around.
func satAdd(a, b int) int {
	if a > math.MaxInt-b {
		return math.MaxInt
	}
	return a + b
}

// BudgetError is the error of a call the budget rejected: errors.Is(err,
// ErrBulkheadFull) is true for it, as for a *FullError, so that whatever
// handles a full bulkhead (the operators, an HTTP 503) handles a full
// budget alike.
type BudgetError struct {
	Budget string // the budget's name
	Class  string // the class of the call
	Reason Reason // NoWait, QueueFull, WaitTimeout or Evicted
}

// Error returns `budget "NAME": class "CLASS" full, does not permit further
// calls (REASON)`.
func (e *BudgetError) Error() string {
	return fmt.Sprintf("budget %q: class %q full, does not permit further calls (%s)", e.Budget, e.Class, e.Reason)
}

// Is reports whether target is ErrBulkheadFull.
func (e *BudgetError) Is(target error) bool { return target == ErrBulkheadFull }

// ErrTooHeavy is the errors.Is target of every *WeightError (a budget's)
// and every *TooHeavyError (a Semaphore's weighted call, SemaphoreCall).
var ErrTooHeavy = errors.New("bulkhead: call heavier than the budget can grant")

// WeightError is the error of a call whose weight is more than the budget
// could grant it even with every other permit free: more than Size minus
// the other groups' reserved permits and the headroom its class must leave,
// or more than its group's Nominal + BorrowingLimit. A waiting call is
// rejected with it when a ChangeConfig makes it such. It is not a
// rejection for lack of permits: errors.Is(err, ErrBulkheadFull) is false.
type WeightError struct {
	Budget  string
	Partner string
	Class   string
	Weight  int // the call's weight
	Limit   int // the most the budget can grant a call of its class and group
}

// Error names the budget, the partner, the class, the weight and the limit.
func (e *WeightError) Error() string {
	return fmt.Sprintf("budget %q: a call of weight %d (partner %q, class %q) is heavier than the %d permits the budget can grant it", e.Budget, e.Weight, e.Partner, e.Class, e.Limit)
}

// Is reports whether target is ErrTooHeavy.
func (e *WeightError) Is(target error) bool { return target == ErrTooHeavy }
