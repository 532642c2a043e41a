package linearizability

import (
	"fmt"
	"hash/fnv"

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
)

// BudgetInput is the input of one operation.
type BudgetInput struct {
	Kind   BudgetKind
	ID     int
	Flow   int
	Class  string
	Weight int
	Size   int
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
	return porcupine.Model{
		Init: func() any { return budgetmodel.New(cfg, flowGroups) },
		Step: func(st, in, out any) (bool, any) {
			m, i, o := st.(*budgetmodel.Model), in.(BudgetInput), out.(BudgetOutput)
			switch i.Kind {
			case BAcquire:
				if m.Get(i.ID) != nil {
					return false, m
				}
				m = m.Clone()
				c := m.Acquire(i.ID, i.Flow, i.Class, i.Weight)
				want := c.State
				switch {
				case c.Fast:
					want = "fast"
				case c.State == "pending" || c.State == "granted":
					want = "queued"
				}
				return o.Outcome == want, m
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
			}
			return false, m
		},
		Equal: func(a, b any) bool { return a.(*budgetmodel.Model).Key() == b.(*budgetmodel.Model).Key() },
		Hash: func(st any) uint64 {
			h := fnv.New64a()
			h.Write([]byte(st.(*budgetmodel.Model).Key()))
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
			}
			return "?"
		},
		DescribeState: func(st any) string { return st.(*budgetmodel.Model).Key() },
	}
}
