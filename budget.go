package bulkhead

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rxbulkhead/bulkhead/internal/clock"
	"github.com/rxbulkhead/bulkhead/internal/nilcheck"
	"github.com/rxbulkhead/bulkhead/internal/publish"
)

// Budget is a pool of permits shared by many partners' bulkheads: the
// capacity of a hub (its connections, its CPU, a database behind it) that
// every partner's calls also need. A call takes the permits of its
// partner's bulkhead first (weight of them for a *Semaphore, else one) and
// then weight permits of the budget (see Partner and BudgetPartner.Call);
// when the budget is contended it is divided among the partners that want
// it by max-min fairness, higher priority classes first, with guaranteed shares per class and per group of partners that
// are lent while unused. A call waiting for the budget is a record in a
// queue, not a goroutine. docs/design.md ("The hub budget") explains the
// order and proves its bounds.
//
// Invariants, all guarded by mu:
//   - held = Σ class.held = Σ group.held = Σ lane.held: the permits of
//     every grant whose CAS succeeded and that was not given back. A permit
//     is counted only once the waiter's Acquisition CAS (pending ->
//     granted) succeeded, in the same critical section, which also makes
//     the outcome visible (settle); a waiter whose Cancel won is never
//     counted.
//   - a waiter is linked in its lane (FIFO) and in its class's list (in
//     arrival order, hence deadline order) while it waits, and waiting =
//     Σ class.waiting = Σ group.waiting (over every group, noGroup
//     included) counts them: enqueueLocked and unlinkLocked, the only
//     places that link and unlink, move the three counts together; a lane is in its class-group's heap iff
//     it has a waiter (outside a pass, which takes lanes out and puts them
//     back).
//   - reserved = Σ group.reserve, with group.reserve = max(0, Nominal -
//     Lendable - group.held).
//   - nobody takes a permit ahead of a waiter that comes first in the
//     admission order (admit.go): a newcomer is granted at once only if
//     nobody waits; otherwise it is queued and a pass decides.
//   - after every operation that can let a waiter in (a permit given back,
//     a newcomer, a waiter leaving, ChangeConfig, an expiry), a pass has
//     run: every waiter that fits has been granted, unless a blocked
//     waiter holds it back (MaxBypass) or the pass stopped at maxPassSkips;
//     in both cases fewer shared permits are idle than the heaviest waiter
//     passed over needs.
//
// Partner permits (not under mu: they are the partner's): a call of weight
// k with a partner holds pk partner permits, pk = k if the partner's
// bulkhead is a *Semaphore and 1 otherwise, from its partner's grant until
// exactly one of: the budget rejects it (deliver, or rejectNewLocked for a
// newcomer), its Cancel takes it out of the budget (withdraw's lead step),
// admit finds it cancelled before it reached the budget, or its own
// ReleasePermission or FinishCall. Every one of them gives back through
// partRelease or partFinish with the call's own k, which with
// partAcquireAsync and partTryAcquire (and the Registry's blocking path,
// SemaphoreCall.AcquirePermission) map a weight to partner permits, so no
// path gives back more or fewer than was taken. A weight the partner can never grant is rejected
// by the partner (*TooHeavyError) before the budget is asked.
//
// Lock order: a partner's lock is never taken under mu, and mu is never
// held while user code runs (callbacks, listeners, a partner's
// ReleasePermission, which may run its own callbacks). A partner's grant
// callback takes mu, on the goroutine its partner decided on.
//
// A Budget is safe for concurrent use.
type Budget struct {
	name   string
	clock  Clock
	epoch  time.Time // deadlines and waits are offsets from it
	events publish.Listeners[BudgetEvent]
	// inline counts the deliveries running on their deciding goroutines
	// (maxInlineDeliveries, as a Semaphore).
	inline atomic.Int32
	// decidedHook, nil but in tests (export_test.go), is called on the
	// deciding goroutine with each queued call's Acquisition in decision
	// order, after its outcome is visible and before any of its callbacks:
	// callbacks of one pass may run on several goroutines in any order.
	decidedHook func(*Acquisition)

	// before holds the budgets whose permits a call can hold while it
	// waits for this one's: those of the partners its partners are built
	// on, at any depth (budget_chain.go). Guarded by budgetOrderMu, not mu.
	before []*Budget

	mu      sync.Mutex
	cfg     BudgetConfig // validated, owns its slices
	held    int
	waiting int
	// classes in priority order; classByName holds them all.
	classes     []*budgetClass
	classByName map[string]*budgetClass
	defaultCls  *budgetClass
	// classIdx is classByName as of the last applyLocked, for lookups
	// without mu (classNamed); never changed once published.
	classIdx atomic.Pointer[map[string]*budgetClass]
	// groups holds every group ever configured (a group dropped by
	// ChangeConfig keeps its state with no share, for its members);
	// noGroup is the group of partners that joined none.
	groups   map[string]*budgetGroup
	noGroup  *budgetGroup
	flows    map[string]*budgetFlow
	reserved int

	seq  uint64 // arrival order of waiters
	pass uint64 // generation of the current dispatch pass
	// skipped holds the lanes a pass took out of their heaps (reused).
	skipped []*lane

	timer    Timer
	timerAt  time.Duration
	timerGen uint64
}

// budgetClass is the state of one class; its fields are guarded by
// Budget.mu. It lives as long as the budget (a class cannot be removed), so
// a Class handle stays valid.
type budgetClass struct {
	b       *Budget
	name    string
	cfg     ClassConfig
	rank    int // position in Budget.classes
	id      int // order of creation: index in BudgetPartner.units
	hrAbove int // Σ Headroom of the classes above
	held    int
	waiting int
	// head, tail: the class's waiters in arrival order, linked through
	// budgetWaiter.cprev/cnext.
	head, tail *budgetWaiter
	// groups: one class-group per group that ever had a lane in this class.
	groups []*classGroup
	skip   uint64 // == Budget.pass: passed over in this pass

	rejectNoWait, rejectQueueFull *Acquisition
	errNoWait, errQueueFull       *BudgetError
	errTimeout, errEvicted        *BudgetError
}

// budgetGroup is the state of one group (guarded by Budget.mu).
type budgetGroup struct {
	name       string
	configured bool // listed in the config in force
	nominal    int
	lendable   int
	limit      int // Nominal + BorrowingLimit, saturating (Unbounded)
	held       int
	waiting    int // waiters of the group's lanes linked in the budget
	reserve    int // max(0, nominal - lendable - held)
}

// budgetFlow is one partner (guarded by Budget.mu). It lives as long as the
// budget, unless it is dropped while idle (dropIdleFlow): then it is gone
// from Budget.flows, dropped is set, and the BudgetPartners that still
// point to it move to the flow of their name on next use (flowLocked).
type budgetFlow struct {
	name    string
	group   *budgetGroup
	lanes   []*lane // one per class the partner has called in
	dropped bool
}

// classGroup holds the lanes of one group in one class that have waiters,
// in a min-heap by (held, arrival of the first waiter).
type classGroup struct {
	class *budgetClass
	group *budgetGroup
	lanes []*lane
	skip  uint64 // == Budget.pass: passed over in this pass
}

// lane is one partner's calls of one class: its waiters in FIFO order and
// the permits it holds.
type lane struct {
	flow       *budgetFlow
	cg         *classGroup
	held       int
	head, tail *budgetWaiter
	idx        int // position in cg.lanes, -1 when not in the heap
}

// NewBudget returns a Budget named name (used in errors and events). It fails
// with a *ConfigError (several joined, see BudgetConfig.Validate) if cfg is
// not valid, and with an error if name is empty or an option is invalid (a
// nil option: an error naming its index in opts). Its only option is
// WithClock.
func NewBudget(name string, cfg BudgetConfig, opts ...Option) (*Budget, error) {
	if name == "" {
		return nil, errors.New("bulkhead: NewBudget: name must not be empty")
	}
	if err := cfg.validateFor(name); err != nil {
		return nil, err
	}
	o, err := newOptions(name, opts)
	if err != nil {
		return nil, err
	}
	b := &Budget{
		name:        name,
		clock:       o.clock,
		classByName: map[string]*budgetClass{},
		groups:      map[string]*budgetGroup{},
		noGroup:     &budgetGroup{limit: Unbounded},
		flows:       map[string]*budgetFlow{},
	}
	b.epoch = b.clock.Now()
	b.applyLocked(cfg.clone())
	return b, nil
}

// Name returns the budget's name.
func (b *Budget) Name() string { return b.name }

// classNamed returns the class named name, or nil, without taking mu: a
// lookup in a map that is never written once published, so a name from
// the wire creates no state.
func (b *Budget) classNamed(name string) *budgetClass {
	return (*b.classIdx.Load())[name]
}

// flowLocked returns p's flow, moving p to the flow of its name if its own
// was dropped (re-creating it, in the group p joined with, if nobody has
// meanwhile).
func (b *Budget) flowLocked(p *BudgetPartner) *budgetFlow {
	f := p.flow
	if !f.dropped {
		return f
	}
	nf := b.flows[f.name]
	if nf == nil {
		nf = &budgetFlow{name: f.name, group: f.group}
		b.flows[f.name] = nf
	}
	p.flow = nf
	return nf
}

// dropIdleFlow forgets the flow named name if it holds no permit and has
// no waiter, and reports whether it did. Partners that point to it move to
// a new flow of that name on their next call (flowLocked), so dropping
// loses nothing: an idle flow's only state is its group, which the
// partner remembers.
func (b *Budget) dropIdleFlow(name string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	f := b.flows[name]
	if f == nil {
		return false
	}
	for _, l := range f.lanes {
		if l.held != 0 || l.head != nil {
			return false
		}
	}
	f.dropped = true
	delete(b.flows, name)
	return true
}

// Config returns the configuration in force (a copy).
func (b *Budget) Config() BudgetConfig {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.cfg.clone()
}

// Class returns the class named name, for BudgetPartner.Call. It fails with
// a *ConfigError naming the budget and the class if there is none.
func (b *Budget) Class(name string) (Class, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if c, ok := b.classByName[name]; ok {
		return Class{c}, nil
	}
	return Class{}, &ConfigError{Name: b.name, Field: "Class", Value: name, Rule: "must name one of the budget's classes"}
}

// Class is a priority class of a Budget, from Budget.Class. The zero Class
// stands for the partner's class (see BudgetPartner.Call).
type Class struct{ c *budgetClass }

// Name returns the class's name ("" for the zero Class).
func (c Class) Name() string {
	if c.c == nil {
		return ""
	}
	return c.c.name
}

// ChangeConfig replaces the configuration of a live budget. If cfg is not
// valid it returns a *ConfigError and keeps the old configuration; so it
// does if cfg drops a class (a class may hold permits and be named by
// Class values: its settings may change, it may move, classes may be
// added, none removed).
//
// A larger Size or a smaller share, headroom or reserve grants waiters at
// once (their callbacks run as for a budget call that decides several
// outcomes, see docs/design.md). A smaller Size never blocks: calls in
// flight finish normally and their permits are absorbed. A class's new
// MaxWaitDuration applies to its calls already waiting, counted from their
// arrival; a queue bound below the queue's length rejects nobody already
// queued. A group dropped from the config leaves its partners with no
// share and no limit; a waiter that the new config makes heavier than the
// budget can grant it is rejected with a *WeightError.
func (b *Budget) ChangeConfig(cfg BudgetConfig) error {
	if err := cfg.validateFor(b.name); err != nil {
		return err
	}
	cfg = cfg.clone()
	b.mu.Lock()
	for _, c := range b.classes {
		if !hasClass(cfg.Classes, c.name) {
			b.mu.Unlock()
			return &ConfigError{Name: b.name, Field: "Classes", Value: c.name, Rule: "must keep every class of the live budget (a class may hold permits)"}
		}
	}
	b.applyLocked(cfg)
	var d budgetDecided
	b.rejectTooHeavyLocked(&d)
	b.passLocked(&d)
	b.rearmLocked()
	b.mu.Unlock()
	b.deliver(&d)
	return nil
}

func hasClass(cs []ClassConfig, name string) bool {
	for _, c := range cs {
		if c.Name == name {
			return true
		}
	}
	return false
}

// applyLocked puts a valid cfg in force: classes by name (new ones created,
// order and settings updated), groups by name, the reserves and headroom
// recomputed.
func (b *Budget) applyLocked(cfg BudgetConfig) {
	b.cfg = cfg
	b.classes = b.classes[:0]
	hr := 0
	for i, cc := range cfg.Classes {
		c := b.classByName[cc.Name]
		if c == nil {
			c = b.newClass(cc.Name)
			b.classByName[cc.Name] = c
		}
		c.cfg, c.rank, c.hrAbove = cc, i, hr
		hr = satAdd(hr, cc.Headroom)
		b.classes = append(b.classes, c)
	}
	idx := make(map[string]*budgetClass, len(b.classByName))
	for name, c := range b.classByName {
		idx[name] = c
	}
	b.classIdx.Store(&idx)
	b.defaultCls = b.classes[len(b.classes)-1]
	if cfg.DefaultClass != "" {
		b.defaultCls = b.classByName[cfg.DefaultClass]
	}
	for _, g := range b.groups {
		g.configured, g.nominal, g.lendable, g.limit = false, 0, 0, Unbounded
	}
	for _, gc := range cfg.Groups {
		g := b.groups[gc.Name]
		if g == nil {
			g = &budgetGroup{name: gc.Name}
			b.groups[gc.Name] = g
		}
		g.configured, g.nominal, g.lendable = true, gc.Nominal, gc.Lendable
		g.limit = satAdd(gc.Nominal, gc.BorrowingLimit)
	}
	b.reserved = 0
	for _, g := range b.groups {
		g.reserve = max(0, g.nominal-g.lendable-g.held)
		b.reserved += g.reserve
	}
}

func (b *Budget) newClass(name string) *budgetClass {
	c := &budgetClass{b: b, name: name, id: len(b.classByName)}
	c.errNoWait = &BudgetError{Budget: b.name, Class: name, Reason: NoWait}
	c.errQueueFull = &BudgetError{Budget: b.name, Class: name, Reason: QueueFull}
	c.errTimeout = &BudgetError{Budget: b.name, Class: name, Reason: WaitTimeout}
	c.errEvicted = &BudgetError{Budget: b.name, Class: name, Reason: Evicted}
	c.rejectNoWait = RejectedAcquisition(c.errNoWait)
	c.rejectQueueFull = RejectedAcquisition(c.errQueueFull)
	return c
}

// BudgetMetrics is a snapshot of a Budget's state.
type BudgetMetrics struct {
	Size           int // the configured number of permits
	InUse          int // permits held; may exceed Size after a shrinking ChangeConfig
	Free           int // max(0, Size - InUse)
	Queued         int // calls waiting
	MaxQueuedCalls int
	// Partners is the number of partners the budget keeps state for
	// (Partner, Flow and a Registry's bulkheads, see WithBudget; a
	// Registry's evicted ones are dropped).
	Partners int
	Classes  []ClassMetrics // in priority order
	Groups   []GroupMetrics // the configured groups, in config order
}

// ClassMetrics is the state of one class.
type ClassMetrics struct {
	Name   string
	InUse  int
	Queued int
}

// GroupMetrics is the state of one group.
type GroupMetrics struct {
	Name  string
	InUse int
	// Queued is the number of calls of the group's partners waiting in the
	// budget (after their partner's permit), as BudgetMetrics.Queued counts
	// them: the groups' Queued add up to it, but for the calls of partners
	// that joined no group or a group the config in force dropped.
	Queued int
	// Reserved is the part of the group's reserve (Nominal - Lendable) it
	// does not use: kept free for it.
	Reserved int
}

// Metrics returns a consistent snapshot of the budget.
func (b *Budget) Metrics() BudgetMetrics {
	b.mu.Lock()
	defer b.mu.Unlock()
	m := BudgetMetrics{
		Size:           b.cfg.Size,
		InUse:          b.held,
		Free:           max(0, b.cfg.Size-b.held),
		Queued:         b.waiting,
		MaxQueuedCalls: b.cfg.MaxQueuedCalls,
		Partners:       len(b.flows),
		Classes:        make([]ClassMetrics, len(b.classes)),
		Groups:         make([]GroupMetrics, len(b.cfg.Groups)),
	}
	for i, c := range b.classes {
		m.Classes[i] = ClassMetrics{Name: c.name, InUse: c.held, Queued: c.waiting}
	}
	for i, gc := range b.cfg.Groups {
		g := b.groups[gc.Name]
		m.Groups[i] = GroupMetrics{Name: g.name, InUse: g.held, Queued: g.waiting, Reserved: g.reserve}
	}
	return m
}

// PartnerOptions says how a partner joins a Budget.
type PartnerOptions struct {
	// Group is the group whose share the partner draws on (one of
	// BudgetConfig.Groups); empty means none. A partner keeps the group it
	// first joined with: joining again with another group fails.
	Group string
	// Class is the class of the partner's calls that name none (the
	// partner's own Bulkhead methods, and Call with a zero Class); empty
	// means the budget's DefaultClass at the time of joining.
	Class string
}

// Partner joins bh to the budget: it returns a BudgetPartner whose calls
// take permits of bh first (a call of weight k takes k if bh is a
// *Semaphore, else one) and then permits of the budget, under bh's name.
// Joining the same name again (a bulkhead re-created with the same name)
// shares the partner's place in the budget. It fails with an error naming
// the budget and the problem if bh is nil (or a nil pointer) or has an
// empty name, or if bh's calls take permits of b already (bh is a
// BudgetPartner of b, a Flow of b, a BudgetCall of one, or another
// budget's partner built on one of them, at any depth): such a call would
// wait for b while holding b's permits, and for itself once b is full. It
// fails with a *ConfigError if opts names an unknown group or class, or
// another group than the partner joined with first.
//
// A partner of another budget a (or one built on it, at any depth) is a
// partner like any other: its calls take a's permits, then b's, so they
// hold a while they wait for b. Partner records that order and refuses a
// join that would break it: if calls holding b's permits can already wait
// for a (some partner of a is built on a partner of b, or of a budget that
// waits for b, at any depth and through any number of budgets), the two
// orders could wait for each other, each budget full of calls waiting for
// the other, and Partner fails with an error naming b, bh and a and the
// path of budgets from b to a. Budgets joined in one order, however many
// chains lead from one to the other, are accepted. The order is recorded
// only by a join that succeeds and is kept as long as the budgets (a
// partner cannot leave its budget); Partner may be called concurrently,
// on one budget or several: the joins that use other budgets' partners are
// checked and recorded one at a time, so two of them that would each close
// half of a cycle cannot both succeed.
func (b *Budget) Partner(bh Bulkhead, opts PartnerOptions) (*BudgetPartner, error) {
	if nilcheck.Is(bh) {
		return nil, fmt.Errorf("budget %q: Partner called with a nil Bulkhead", b.name)
	}
	chain := chainBudgets(bh)
	if containsBudget(chain, b) {
		return nil, fmt.Errorf("budget %q: Partner called with a bulkhead (%q) whose calls take permits of this budget already: they would wait for it holding its permits", b.name, bh.Name())
	}
	if len(chain) > 0 {
		return b.partnerInOrder(bh, chain, opts)
	}
	return b.join(bh.Name(), bh, opts)
}

// Flow is Partner for calls that need the budget only: the returned
// BudgetPartner takes no partner permit. name identifies it among the
// budget's partners.
func (b *Budget) Flow(name string, opts PartnerOptions) (*BudgetPartner, error) {
	return b.join(name, nil, opts)
}

func (b *Budget) join(name string, bh Bulkhead, opts PartnerOptions) (*BudgetPartner, error) {
	if name == "" {
		return nil, fmt.Errorf("budget %q: a partner's name must not be empty", b.name)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	g := b.noGroup
	if opts.Group != "" {
		g = b.groups[opts.Group]
		if g == nil || !g.configured {
			return nil, &ConfigError{Name: b.name, Field: "PartnerOptions.Group", Value: opts.Group, Rule: "must name one of the budget's groups"}
		}
	}
	c := b.defaultCls
	if opts.Class != "" {
		c = b.classByName[opts.Class]
		if c == nil {
			return nil, &ConfigError{Name: b.name, Field: "PartnerOptions.Class", Value: opts.Class, Rule: "must name one of the budget's classes"}
		}
	}
	f := b.flows[name]
	switch {
	case f == nil:
		f = &budgetFlow{name: name, group: g}
		b.flows[name] = f
	case f.group != g:
		return nil, &ConfigError{Name: b.name, Field: "PartnerOptions.Group", Value: opts.Group,
			Rule: fmt.Sprintf("must be the group partner %q joined with first (%q)", name, f.group.name)}
	}
	p := &BudgetPartner{b: b, name: name, flow: f, part: bh, class: c, units: make([]BudgetCall, len(b.classByName))}
	p.sem, _ = bh.(*Semaphore)
	for _, x := range b.classByName {
		p.units[x.id] = BudgetCall{p: p, c: x, k: 1}
	}
	return p, nil
}

// laneLocked returns f's lane of class c, creating it (and its class-group)
// on first use.
func (b *Budget) laneLocked(f *budgetFlow, c *budgetClass) *lane {
	for _, l := range f.lanes {
		if l.cg.class == c {
			return l
		}
	}
	var cg *classGroup
	for _, x := range c.groups {
		if x.group == f.group {
			cg = x
			break
		}
	}
	if cg == nil {
		cg = &classGroup{class: c, group: f.group}
		c.groups = append(c.groups, cg)
	}
	l := &lane{flow: f, cg: cg, idx: -1}
	f.lanes = append(f.lanes, l)
	return l
}

// sinceEpoch is the clock's time as an offset from the budget's epoch.
func (b *Budget) sinceEpoch() time.Duration { return sinceEpoch(b.clock, b.epoch) }

// deadline returns the deadline of a waiter of class c that arrived at enq,
// or math.MaxInt64 for a class that waits without bound.
func (c *budgetClass) deadline(enq time.Duration) time.Duration {
	if c.cfg.MaxWaitDuration == NoTimeout {
		return math.MaxInt64
	}
	return clock.Add(enq, c.cfg.MaxWaitDuration)
}
