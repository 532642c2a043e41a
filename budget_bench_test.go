package bulkhead_test

import (
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/rxbulkhead/bulkhead"
)

// Benchmarks of the budget: the fast path (nobody waits, the call fits),
// what a waiting call costs, and a release that grants a waiter among many
// partners' lanes.

func benchBudget(b *testing.B, size int) *bulkhead.Budget {
	bud, err := bulkhead.NewBudget("bench", bulkhead.BudgetConfig{
		Size: size, MaxQueuedCalls: bulkhead.Unbounded, MaxBypass: size / 10,
		Classes: []bulkhead.ClassConfig{
			{Name: "interactive", Headroom: size / 50, MaxWaitDuration: time.Hour, MaxQueuedCalls: bulkhead.Unbounded},
			{Name: "batch", MaxWaitDuration: time.Hour, MaxQueuedCalls: bulkhead.Unbounded},
		},
	})
	if err != nil {
		b.Fatal(err)
	}
	return bud
}

// BenchmarkBudgetFastPath is AcquirePermissionAsync + FinishCall granted at
// once: a partner's Semaphore alone (what a call without a budget costs),
// a budget flow alone, and both levels through a BudgetPartner. It reports
// the process's CPU time per op (cpu-ns/op) next to wall time.
func BenchmarkBudgetFastPath(b *testing.B) {
	newSem := func() *bulkhead.Semaphore {
		s, err := bulkhead.New("partner", bulkhead.Config{MaxConcurrentCalls: 20, MaxWaitDuration: time.Hour, MaxQueuedCalls: bulkhead.Unbounded})
		if err != nil {
			b.Fatal(err)
		}
		return s
	}
	cases := map[string]func() bulkhead.Bulkhead{
		"semaphore": func() bulkhead.Bulkhead { return newSem() },
		"budget-flow": func() bulkhead.Bulkhead {
			f, _ := benchBudget(b, 1000).Flow("partner", bulkhead.PartnerOptions{Class: "interactive"})
			return f
		},
		"budget-partner": func() bulkhead.Bulkhead {
			p, _ := benchBudget(b, 1000).Partner(newSem(), bulkhead.PartnerOptions{Class: "interactive"})
			return p
		},
	}
	for _, name := range []string{"semaphore", "budget-flow", "budget-partner"} {
		b.Run(name, func(b *testing.B) {
			bh := cases[name]()
			b.ReportAllocs()
			cpu := processCPU() // cpu-ns/op: wall time on a shared machine counts waits for a core
			for b.Loop() {
				if !bh.AcquirePermissionAsync().Granted() {
					b.Fatal("not granted")
				}
				bh.FinishCall()
			}
			b.ReportMetric(float64(processCPU()-cpu)/float64(b.N), "cpu-ns/op")
		})
	}
}

// BenchmarkBudgetWaiterMemory measures the heap a waiting call holds, with
// nothing registered on it: a flow's call waiting in the budget, a
// partner's call waiting in the budget (holding its partner permit), and a
// partner's call waiting for its partner (the partner's queue record, the
// budget's record and the grant callback between them).
func BenchmarkBudgetWaiterMemory(b *testing.B) {
	const queued = 50_000
	for _, stage := range []string{"flow-in-budget", "partner-in-budget", "partner-waiting-for-partner"} {
		b.Run(stage, func(b *testing.B) {
			for b.Loop() {
				bud := benchBudget(b, 1)
				partnerCap := queued + 1
				if stage == "partner-waiting-for-partner" {
					partnerCap = 1
				}
				sem, _ := bulkhead.New("p", bulkhead.Config{MaxConcurrentCalls: partnerCap, MaxWaitDuration: time.Hour, MaxQueuedCalls: bulkhead.Unbounded})
				var bh bulkhead.Bulkhead
				if stage == "flow-in-budget" {
					bh, _ = bud.Flow("p", bulkhead.PartnerOptions{Class: "batch"})
				} else {
					bh, _ = bud.Partner(sem, bulkhead.PartnerOptions{Class: "batch"})
				}
				holder := bh.AcquirePermissionAsync() // takes the budget's (or the partner's) only permit
				if !holder.Granted() {
					b.Fatal("holder not granted")
				}
				gBefore := runtime.NumGoroutine()
				before := heapInUse()
				waiters := make([]*bulkhead.Acquisition, queued)
				for i := range waiters {
					waiters[i] = bh.AcquirePermissionAsync()
				}
				after := heapInUse()
				b.ReportMetric((float64(after-before)-float64(queued*8))/queued, "B/waiter")
				b.ReportMetric(float64(runtime.NumGoroutine()-gBefore)/queued, "goroutines/waiter")
				for _, w := range waiters {
					w.Cancel()
				}
				bh.FinishCall()
			}
		})
	}
}

// BenchmarkBudgetReleaseGrantsAWaiter is a FinishCall that hands its
// permit to a waiter (a dispatch pass) with every partner's lane waiting,
// the budget full: the cost of the contended path per grant.
func BenchmarkBudgetReleaseGrantsAWaiter(b *testing.B) {
	for _, partners := range []int{10, 500} {
		b.Run(fmt.Sprint("partners=", partners), func(b *testing.B) {
			bud := benchBudget(b, 100)
			batch, _ := bud.Class("batch")
			var calls []bulkhead.BudgetCall
			for i := range partners {
				f, _ := bud.Flow(fmt.Sprint("p", i), bulkhead.PartnerOptions{Class: "batch"})
				calls = append(calls, f.Call(batch, 1+i%4))
			}
			// Fill the budget (but the interactive class's headroom), then
			// keep four calls per partner waiting: each grant, learnt by its
			// callback (inline in the FinishCall that made it, or on a fresh
			// goroutine for the others of the same pass), is held and its
			// call asked again.
			var mu sync.Mutex
			var held, granted []bulkhead.BudgetCall
			pending := map[*bulkhead.Acquisition]bool{}
			ask := func(c bulkhead.BudgetCall) bool {
				a := c.AcquirePermissionAsync()
				if a.Granted() {
					held = append(held, c)
					return true
				}
				mu.Lock()
				pending[a] = true
				mu.Unlock()
				a.OnDone(func(err error) {
					mu.Lock()
					delete(pending, a)
					if err == nil {
						granted = append(granted, c)
					}
					mu.Unlock()
				})
				return false
			}
			for i := 0; ask(calls[i%partners]); i++ {
			}
			for range 4 {
				for _, c := range calls {
					ask(c)
				}
			}
			var g []bulkhead.BudgetCall
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				for len(held) == 0 {
					runtime.Gosched() // a grant's callback still to run elsewhere
					mu.Lock()
					held, granted = append(held, granted...), granted[:0]
					mu.Unlock()
				}
				c := held[len(held)-1]
				held = held[:len(held)-1]
				c.FinishCall() // grants one or more waiters
				mu.Lock()
				g, granted = append(g[:0], granted...), granted[:0]
				mu.Unlock()
				for _, c := range g {
					held = append(held, c)
					ask(c)
				}
			}
			b.StopTimer()
			mu.Lock()
			var open []*bulkhead.Acquisition
			for a := range pending {
				open = append(open, a)
			}
			mu.Unlock()
			for _, a := range open {
				a.Cancel() // if a grant won, its call is in granted, given back below
			}
			for bud.Metrics().InUse > 0 {
				mu.Lock()
				all := append(held, granted...)
				held, granted = nil, nil
				mu.Unlock()
				for _, c := range all {
					c.FinishCall()
				}
				runtime.Gosched()
			}
		})
	}
}
