package linearizability

import (
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strings"

	"github.com/anishathalye/porcupine"

	bulkhead "github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/internal/budgetmodel"
)

// BudgetKind is an operation of a history of a Budget.
type BudgetKind uint8

// Operations of a budget history; BudgetInput and BudgetOutput say what
// each carries.
const (
	// BAcquire: AcquirePermissionAsync of call ID (Flow, Class, Weight);
	// Output.Outcome is what the call itself decided: "fast" (granted at
	// once with nobody waiting: the shared granted Acquisition), "queued"
	// (it returned a record: waiting, or granted by the pass its arrival
	// ran), or "rejected:REASON" (decided at once).
	BAcquire BudgetKind = iota
	// BRead: call ID's outcome as Err says at that moment: pending,
	// granted (also after its release), cancelled or rejected:REASON.
	BRead
	// BCancel: Cancel of call ID; Output.OK.
	BCancel
	// BRelease: FinishCall of granted call ID; no output.
	BRelease
	// BChange: ChangeConfig to Size = Input.Size, all else unchanged; no
	// output.
	BChange
	// BMetrics: Output.InUse and Output.Queued.
	BMetrics
	// BAwait: waits for Done of call ID, which a Cancel that returned
	// false says is decided (its winner may not have made it visible yet),
	// then reads its outcome as BRead does; never pending.
	BAwait
	// BPartnerMetrics: the Metrics of Flow's partner bulkhead:
	// Output.InUse (InFlightCalls) and Output.Queued.
	BPartnerMetrics
	// BChangePartner: ChangeConfig of Flow's partner bulkhead to
	// MaxConcurrentCalls = Input.Size, all else unchanged; no output.
	BChangePartner
	// BReturned: the operation on call ID through a partner (BAcquire,
	// BCancel that returned true, BRelease) has returned: recorded right
	// after it, by the same client; no output.
	BReturned
)

// BudgetInput is the input of one operation.
type BudgetInput struct {
	Kind   BudgetKind
	ID     int
	Flow   int
	Class  string
	Weight int
	Size   int // BChange: the budget's Size; BChangePartner: the partner's limit
}

// BudgetOutput is the output of one operation.
type BudgetOutput struct {
	Outcome string
	OK      bool
	InUse   int
	Queued  int
}

// BudgetModel returns the sequential specification of a Budget created
// with cfg whose flows joined flowGroups, on a clock that never fires: the
// naive model of package budgetmodel, whose every operation is one
// linearization point (a decision is visible at once, and Metrics never
// disagrees with Err).
func BudgetModel(cfg bulkhead.BudgetConfig, flowGroups []string) porcupine.Model {
	return BudgetModelWithPartners(cfg, flowGroups, nil)
}

// BudgetModelWithPartners is BudgetModel where flow i has a partner
// bulkhead, a *Semaphore created with *partners[i], if that is not nil
// (budgetmodel.NewWithPartners). A call through a partner is not one
// atomic step across the two levels (docs/design.md, "What is
// linearizable"): its arrival at the budget once its partner granted it,
// and the give-back of its partner permits after a budget rejection,
// cancel or release, are steps of their own, that may run at any moment
// after the operation that started them, in any order. So the state is
// the set of the models the history so far allows, each with its pending
// steps: before each operation every model may run any of its pending
// steps (the closure), and the operation keeps the models it agrees with.
// The steps an operation runs on its own goroutine before it returns
// (budgetmodel.Model.Owes) must have run by BReturned, which the recorder
// records right after it returns; an acquisition's outcome is checked
// when the arrival that decides it runs (Model.Expect). Without partners
// the set holds one model and nothing is pending.
func BudgetModelWithPartners(cfg bulkhead.BudgetConfig, flowGroups []string, partners []*bulkhead.Config) porcupine.Model {
	step := func(m *budgetmodel.Model, i BudgetInput, o BudgetOutput) (bool, *budgetmodel.Model) {
		switch i.Kind {
		case BAcquire:
			if m.Get(i.ID) != nil {
				return false, m
			}
			m = m.Clone()
			m.Acquire(i.ID, i.Flow, i.Class, i.Weight)
			return m.Expect(i.ID, o.Outcome), m
		case BReturned:
			return !m.Owes(i.ID), m
		case BRead, BAwait:
			c := m.Get(i.ID)
			if c == nil || i.Kind == BAwait && o.Outcome == "pending" {
				return false, m
			}
			want := c.State
			if want == "released" {
				want = "granted"
			}
			return o.Outcome == want, m
		case BCancel:
			c := m.Get(i.ID)
			if c == nil || o.OK != (c.State == "pending") {
				return false, m
			}
			if o.OK {
				m = m.Clone()
				m.Cancel(i.ID)
			}
			return true, m
		case BRelease:
			c := m.Get(i.ID)
			if c == nil || c.State != "granted" {
				return false, m
			}
			m = m.Clone()
			m.Release(i.ID)
			return true, m
		case BChange:
			m = m.Clone()
			next := cfg
			next.Size = i.Size
			m.Change(next)
			return true, m
		case BMetrics:
			return o.InUse == m.InUse() && o.Queued == m.Queued(), m
		case BPartnerMetrics:
			return o.InUse == m.PartnerInUse(i.Flow) && o.Queued == m.PartnerQueued(i.Flow), m
		case BChangePartner:
			m = m.Clone()
			next := *partners[i.Flow]
			next.MaxConcurrentCalls = i.Size
			m.ChangePartner(i.Flow, next)
			return true, m
		}
		return false, m
	}
	return porcupine.Model{
		Init: func() any { return newModelSet(budgetmodel.NewWithPartners(cfg, flowGroups, partners)) },
		Step: func(st, in, out any) (bool, any) {
			set, i, o := st.(modelSet), in.(BudgetInput), out.(BudgetOutput)
			var next []*budgetmodel.Model
			for _, m := range set.closure() {
				if ok, n := step(m, i, o); ok {
					next = append(next, n)
				}
			}
			if len(next) == 0 {
				return false, set
			}
			return true, newModelSet(next...)
		},
		Equal: func(a, b any) bool { return a.(modelSet).key == b.(modelSet).key },
		Hash: func(st any) uint64 {
			h := fnv.New64a()
			h.Write([]byte(st.(modelSet).key))
			return h.Sum64()
		},
		DescribeOperation: func(in, out any) string {
			i, o := in.(BudgetInput), out.(BudgetOutput)
			switch i.Kind {
			case BAcquire:
				return fmt.Sprintf("#%d = f%d.Call(%s, %d).AcquirePermissionAsync(): %s", i.ID, i.Flow, i.Class, i.Weight, o.Outcome)
			case BRead:
				return fmt.Sprintf("#%d.Err(): %s", i.ID, o.Outcome)
			case BCancel:
				return fmt.Sprintf("#%d.Cancel() = %v", i.ID, o.OK)
			case BRelease:
				return fmt.Sprintf("#%d FinishCall()", i.ID)
			case BChange:
				return fmt.Sprintf("ChangeConfig(Size: %d)", i.Size)
			case BMetrics:
				return fmt.Sprintf("Metrics(): in use %d, queued %d", o.InUse, o.Queued)
			case BAwait:
				return fmt.Sprintf("<-#%d.Done(): %s", i.ID, o.Outcome)
			case BPartnerMetrics:
				return fmt.Sprintf("partner of f%d Metrics(): in flight %d, queued %d", i.Flow, o.InUse, o.Queued)
			case BChangePartner:
				return fmt.Sprintf("partner of f%d ChangeConfig(MaxConcurrentCalls: %d)", i.Flow, i.Size)
			case BReturned:
				return fmt.Sprintf("#%d: returned", i.ID)
			}
			return "?"
		},
		DescribeState: func(st any) string { return st.(modelSet).describe() },
	}
}

// modelSet is a set of distinct models, by key, in key order.
type modelSet struct {
	ms  []*budgetmodel.Model
	key string // the members' keys, in order
}

func newModelSet(ms ...*budgetmodel.Model) modelSet {
	keys := map[string]*budgetmodel.Model{}
	for _, m := range ms {
		keys[m.Key()] = m
	}
	sorted := slices.Sorted(maps.Keys(keys))
	set := modelSet{key: strings.Join(sorted, "\n")}
	for _, k := range sorted {
		set.ms = append(set.ms, keys[k])
	}
	return set
}

// closure returns the members and every model they reach by running any
// of their pending steps, in any order, any number of them.
func (s modelSet) closure() []*budgetmodel.Model {
	out := slices.Clone(s.ms)
	seen := map[string]bool{}
	for _, m := range s.ms {
		seen[m.Key()] = true
	}
	for n := 0; n < len(out); n++ {
		for _, next := range out[n].Steps() {
			if next.Invalid() {
				continue
			}
			if k := next.Key(); !seen[k] {
				seen[k] = true
				out = append(out, next)
			}
		}
	}
	return out
}

func (s modelSet) describe() string {
	var d []string
	for _, m := range s.ms {
		d = append(d, m.Describe())
	}
	return strings.Join(d, " | or | ")
}
