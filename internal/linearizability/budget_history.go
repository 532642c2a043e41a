package linearizability

import (
	"errors"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/anishathalye/porcupine"

	bulkhead "github.com/rxbulkhead/bulkhead"
)

// BudgetRecorder records the operations of several clients on one Budget's
// flows and partners, with call and return times from one atomic counter.
type BudgetRecorder struct {
	clock atomic.Int64
	ids   atomic.Int64
	mu    sync.Mutex
	ops   []porcupine.Operation
}

func (r *BudgetRecorder) record(client int, in BudgetInput, f func() BudgetOutput) BudgetOutput {
	call := r.clock.Add(1)
	runtime.Gosched() // a wider interval: more operations overlap
	out := f()
	runtime.Gosched()
	ret := r.clock.Add(1)
	r.mu.Lock()
	r.ops = append(r.ops, porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: ret})
	r.mu.Unlock()
	return out
}

// History returns the operations recorded so far.
func (r *BudgetRecorder) History() []porcupine.Operation {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]porcupine.Operation(nil), r.ops...)
}

// budgetOutcome names what Err says now, as BudgetModel does.
func budgetOutcome(a *bulkhead.Acquisition) string {
	var be *bulkhead.BudgetError
	switch err := a.Err(); {
	case err == nil:
		return "granted"
	case err == bulkhead.ErrPending:
		return "pending"
	case errors.Is(err, bulkhead.ErrCancelled):
		return "cancelled"
	}
	var te *bulkhead.TooHeavyError
	var fe *bulkhead.FullError
	switch err := a.Err(); {
	case errors.As(err, &te):
		return "rejected:partner-heavy"
	case errors.As(err, &fe):
		return "rejected:partner:" + fe.Reason.String()
	case errors.Is(err, bulkhead.ErrTooHeavy):
		return "rejected:heavy"
	case errors.As(err, &be):
		return "rejected:" + be.Reason.String()
	}
	return "?"
}

type budgetCall struct {
	id      int
	call    bulkhead.BudgetCall
	a       *bulkhead.Acquisition
	partner bool // its flow has a partner bulkhead
}

// returned records BReturned for a call through a partner, right after
// the operation on it returned.
func (r *BudgetRecorder) returned(client int, c budgetCall) {
	if c.partner {
		r.record(client, BudgetInput{Kind: BReturned, ID: c.id}, func() BudgetOutput { return BudgetOutput{} })
	}
}

// BudgetClient runs ops random operations as client number id on flows
// (whose classes are classes), recording them in r: calls of random flow,
// class and weight (1 or 2), reads of its calls' outcomes, Cancel, FinishCall
// of the calls it saw granted, ChangeConfig to one of sizes (with cfg's
// other settings), Metrics. Flow i's partner bulkhead, if it has one, is
// parts[i] (created with partCfgs[i]): the client also reads its Metrics
// and changes its MaxConcurrentCalls to one of partLimits. At the end it
// withdraws or gives back every call it still has (recorded too).
func (r *BudgetRecorder) BudgetClient(b *bulkhead.Budget, cfg bulkhead.BudgetConfig, flows []*bulkhead.BudgetPartner, classes []bulkhead.Class,
	id, ops int, rng *rand.Rand, sizes []int, parts []*bulkhead.Semaphore, partCfgs []*bulkhead.Config, partLimits []int) {
	var partFlows []int
	for i, p := range parts {
		if p != nil {
			partFlows = append(partFlows, i)
		}
	}
	var open, held []budgetCall
	read := func(k int, kind BudgetKind) {
		c := open[k]
		out := r.record(id, BudgetInput{Kind: kind, ID: c.id}, func() BudgetOutput {
			if kind == BAwait {
				<-c.a.Done()
			}
			return BudgetOutput{Outcome: budgetOutcome(c.a)}
		})
		if out.Outcome != "pending" {
			open = append(open[:k], open[k+1:]...)
			if out.Outcome == "granted" {
				held = append(held, c)
			}
		}
	}
	for range ops {
		switch op := rng.IntN(100); {
		case op < 35:
			n := int(r.ids.Add(1))
			f, cl, w := rng.IntN(len(flows)), rng.IntN(len(classes)), 1+rng.IntN(2)
			c := budgetCall{id: n, call: flows[f].Call(classes[cl], w), partner: f < len(parts) && parts[f] != nil}
			out := r.record(id, BudgetInput{Kind: BAcquire, ID: n, Flow: f, Class: classes[cl].Name(), Weight: w}, func() BudgetOutput {
				c.a = c.call.AcquirePermissionAsync()
				switch o := budgetOutcome(c.a); {
				case c.a == bulkhead.GrantedAcquisition():
					return BudgetOutput{Outcome: "fast"}
				case o == "rejected:no wait" || o == "rejected:queue full" || o == "rejected:heavy" ||
					o == "rejected:partner:no wait" || o == "rejected:partner:queue full" || o == "rejected:partner-heavy":
					return BudgetOutput{Outcome: o} // decided at once, by this call
				}
				return BudgetOutput{Outcome: "queued"}
			})
			r.returned(id, c)
			switch out.Outcome {
			case "fast":
				held = append(held, c)
			case "queued":
				open = append(open, c)
			}
		case op < 55 && len(open) > 0:
			read(rng.IntN(len(open)), BRead)
		case op < 65 && len(open) > 0:
			k := rng.IntN(len(open))
			c := open[k]
			if r.record(id, BudgetInput{Kind: BCancel, ID: c.id}, func() BudgetOutput { return BudgetOutput{OK: c.a.Cancel()} }).OK {
				r.returned(id, c)
				open = append(open[:k], open[k+1:]...)
			} else {
				read(k, BAwait)
			}
		case op < 85 && len(held) > 0:
			k := rng.IntN(len(held))
			c := held[k]
			held = append(held[:k], held[k+1:]...)
			r.record(id, BudgetInput{Kind: BRelease, ID: c.id}, func() BudgetOutput { c.call.FinishCall(); return BudgetOutput{} })
			r.returned(id, c)
		case op < 90 && len(sizes) > 0:
			next := cfg
			next.Size = sizes[rng.IntN(len(sizes))]
			r.record(id, BudgetInput{Kind: BChange, Size: next.Size}, func() BudgetOutput {
				if err := b.ChangeConfig(next); err != nil {
					panic(err)
				}
				return BudgetOutput{}
			})
		case op < 93 && len(partFlows) > 0 && len(partLimits) > 0:
			f := partFlows[rng.IntN(len(partFlows))]
			next := *partCfgs[f]
			next.MaxConcurrentCalls = partLimits[rng.IntN(len(partLimits))]
			r.record(id, BudgetInput{Kind: BChangePartner, Flow: f, Size: next.MaxConcurrentCalls}, func() BudgetOutput {
				if err := parts[f].ChangeConfig(next); err != nil {
					panic(err)
				}
				return BudgetOutput{}
			})
		case op < 96 && len(partFlows) > 0:
			f := partFlows[rng.IntN(len(partFlows))]
			r.record(id, BudgetInput{Kind: BPartnerMetrics, Flow: f}, func() BudgetOutput {
				m := parts[f].Metrics()
				return BudgetOutput{InUse: m.InFlightCalls, Queued: m.QueuedCalls}
			})
		default:
			r.record(id, BudgetInput{Kind: BMetrics}, func() BudgetOutput {
				m := b.Metrics()
				return BudgetOutput{InUse: m.InUse, Queued: m.Queued}
			})
		}
	}
	// Withdraw what still waits; what a grant won is read as granted and
	// given back below.
	for len(open) > 0 {
		c := open[0]
		if !r.record(id, BudgetInput{Kind: BCancel, ID: c.id}, func() BudgetOutput { return BudgetOutput{OK: c.a.Cancel()} }).OK {
			read(0, BAwait)
			continue
		}
		r.returned(id, c)
		open = open[1:]
	}
	for _, c := range held {
		r.record(id, BudgetInput{Kind: BRelease, ID: c.id}, func() BudgetOutput { c.call.FinishCall(); return BudgetOutput{} })
		r.returned(id, c)
	}
}
