package hubsim

import (
	"slices"
	"time"
)

// Result is what one run measured. The latency window is [BurstAt,
// BurstAt+Window]; the fairness and utilisation window starts Settle later.
type Result struct {
	Mode Mode
	Seed uint64

	// Interactive calls that arrived in the window: latency (arrival to
	// the end of the call) of those granted, and how many were rejected.
	InteractiveCalls    int
	InteractiveRejected int
	InteractiveP50      time.Duration
	InteractiveP99      time.Duration

	// Utilisation is the mean share of the hub's capacity in use over the
	// window's samples in which calls waited for it (the budget's queue,
	// or the pool's, not empty); DemandSamples counts those samples.
	Utilisation   float64
	DemandSamples int
	// Jain is Jain's fairness index of the batch partners' shares of the
	// hub over the window (permit-seconds each): they all have the same
	// demand. BatchUse is the mean permits they held together.
	Jain     float64
	BatchUse float64
	// FairWindow is the window Jain and BatchUse are measured over: from
	// Settle after the burst until the end of the latency window or, if
	// sooner, until a batch partner has no document left waiting (its
	// demand is no longer equal to the others').
	FairWindow time.Duration

	BatchDocs     int
	BatchRejected int
	BatchEnd      time.Duration // when the last document ended (or was rejected)

	// Waits in the budget (the pool, without one), from arrival in it to
	// the decision: the longest per class, and the batch documents' per
	// weight.
	MaxWait      map[string]time.Duration
	WaitByWeight []WeightWait
	// WaitsWithin says every call was decided within its MaxWaitDuration
	// at the budget (pool) level; Undecided counts calls never decided.
	WaitsWithin bool
	Undecided   int
}

// WeightWait is the waits of the batch documents of one weight.
type WeightWait struct {
	Weight        int
	Docs          int
	Rejected      int
	P50, P99, Max time.Duration
}

func (s *sim) result(seed uint64) Result {
	sc := s.sc
	r := Result{Mode: s.mode, Seed: seed, MaxWait: map[string]time.Duration{}, WaitsWithin: true}
	from, to := sc.BurstAt, sc.BurstAt+sc.Window
	settled := from + sc.Settle // fairness and utilisation from then
	var lat []time.Duration
	// Fairness is over partners with equal demand: until the first batch
	// partner has had its last document admitted.
	fairTo := to
	if s.mode != NoBurst {
		last := make([]time.Duration, sc.Partners-sc.Interactive)
		for _, c := range s.calls {
			if c.batch {
				last[c.partner-sc.Interactive] = max(last[c.partner-sc.Interactive], c.decided)
			}
		}
		fairTo = min(fairTo, slices.Min(last))
	}
	r.FairWindow = max(fairTo-settled, 0)
	share := make([]float64, sc.Partners-sc.Interactive)
	for _, c := range s.calls {
		if c.decided == 0 && c.granted < 0 && !c.rejected {
			r.Undecided++
		}
		if c.batch {
			r.BatchDocs++
			if c.rejected {
				r.BatchRejected++
			}
			r.BatchEnd = max(r.BatchEnd, c.done, c.decided)
			if c.granted >= 0 {
				end := c.done
				if end < 0 {
					end = to
				}
				if o := min(end, fairTo) - max(c.granted, settled); o > 0 {
					share[c.partner-sc.Interactive] += float64(c.k) * o.Seconds()
				}
			}
			continue
		}
		if c.arrival < from || c.arrival >= to {
			continue
		}
		r.InteractiveCalls++
		if c.rejected {
			r.InteractiveRejected++
			continue
		}
		lat = append(lat, c.done-c.arrival)
	}
	slices.Sort(lat)
	r.InteractiveP50, r.InteractiveP99 = quantile(lat, 0.50), quantile(lat, 0.99)
	r.Jain = jain(share)

	if r.FairWindow > 0 {
		for _, x := range share {
			r.BatchUse += x / r.FairWindow.Seconds()
		}
	}
	util := 0.0
	for _, smp := range s.samples {
		if smp.at >= settled && smp.at <= to && smp.waiting > 0 {
			util += float64(smp.inUse) / float64(sc.Size)
			r.DemandSamples++
		}
	}
	if r.DemandSamples > 0 {
		r.Utilisation = util / float64(r.DemandSamples)
	}
	r.waits(s)
	return r
}

// waits fills MaxWait and WaitByWeight, from the budget's events or the
// pool's own record.
func (r *Result) waits(s *sim) {
	sc := s.sc
	limit := map[string]time.Duration{"interactive": sc.InteractiveWait, "batch": sc.BatchWait}
	if s.mode == OneClass {
		limit["interactive"] = sc.BatchWait // one class, one wait
	}
	byWeight := map[int][]time.Duration{}
	rejected := map[int]int{}
	add := func(batch bool, weight int, wait time.Duration, rej bool) {
		kind := "interactive"
		if batch {
			kind = "batch"
		}
		r.MaxWait[kind] = max(r.MaxWait[kind], wait)
		if wait > limit[kind] {
			r.WaitsWithin = false
		}
		if batch {
			byWeight[weight] = append(byWeight[weight], wait)
			if rej {
				rejected[weight]++
			}
		}
	}
	if s.mode == NoBudget {
		for _, c := range s.calls {
			if c.poolAt == 0 && c.granted < 0 && !c.waitEnd {
				continue // never reached the pool
			}
			add(c.batch, c.k, c.decided-c.poolAt, c.rejected)
		}
	} else {
		for _, w := range s.budgetWaits {
			add(w.batch, w.weight, w.wait, false)
		}
		for _, c := range s.calls {
			if c.batch && c.rejected {
				rejected[c.k]++
			}
		}
	}
	for _, ws := range sc.BatchWeights {
		xs := byWeight[ws.Weight]
		slices.Sort(xs)
		ww := WeightWait{Weight: ws.Weight, Docs: len(xs), Rejected: rejected[ws.Weight], P50: quantile(xs, 0.5), P99: quantile(xs, 0.99)}
		if len(xs) > 0 {
			ww.Max = xs[len(xs)-1]
		}
		r.WaitByWeight = append(r.WaitByWeight, ww)
	}
}

// quantile returns the q-quantile of sorted xs (0 if empty).
func quantile(xs []time.Duration, q float64) time.Duration {
	if len(xs) == 0 {
		return 0
	}
	i := int(q * float64(len(xs)))
	return xs[min(i, len(xs)-1)]
}

// jain returns Jain's fairness index of xs: (Σx)² / (n Σx²), 1 when all
// are equal, 1/n when one has everything.
func jain(xs []float64) float64 {
	var sum, sq float64
	for _, x := range xs {
		sum += x
		sq += x * x
	}
	if sq == 0 {
		return 1
	}
	return sum * sum / (float64(len(xs)) * sq)
}
