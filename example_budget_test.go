package bulkhead_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/testkit"
)

// A hub's budget of 1,000 permits shared by every partner's bulkhead:
// interactive calls before batch documents, 20 permits kept free for
// interactive bursts, 50 guaranteed to batch work so it never starves.
func ExampleNewBudget() {
	hub, err := bulkhead.NewBudget("hub", bulkhead.BudgetConfig{
		Size:           1000,
		MaxQueuedCalls: bulkhead.Unbounded,
		MaxBypass:      100,
		Classes: []bulkhead.ClassConfig{
			{Name: "interactive", Headroom: 20, MaxWaitDuration: time.Second, MaxQueuedCalls: bulkhead.Unbounded},
			{Name: "batch", Share: 50, MaxWaitDuration: time.Minute, MaxQueuedCalls: bulkhead.Unbounded},
		},
	})
	if err != nil {
		panic(err)
	}
	walmart, _ := bulkhead.New("walmart", bulkhead.Config{MaxConcurrentCalls: 20, MaxWaitDuration: time.Second, MaxQueuedCalls: bulkhead.Unbounded})
	partner, _ := hub.Partner(walmart, bulkhead.PartnerOptions{Class: "interactive"})

	// The partner's permit first, then the budget's: one Acquisition for both.
	if a := partner.AcquirePermissionAsync(); a.Granted() {
		fmt.Println(walmart.Metrics().InFlightCalls, hub.Metrics().InUse)
		partner.FinishCall() // both back
	}
	fmt.Println(walmart.Metrics().InFlightCalls, hub.Metrics().InUse)
	// Output:
	// 1 1
	// 0 0
}

// A 10 MB EDI batch costs 8 permits where an acknowledgement costs 1, of
// the budget and of the partner's own bulkhead (a *Semaphore) alike; a
// weight the partner's bulkhead could never hold is rejected by it, before
// the budget is asked.
func ExampleBudgetPartner_Call() {
	hub, _ := bulkhead.NewBudget("hub", bulkhead.BudgetConfig{
		Size:           10,
		MaxQueuedCalls: bulkhead.Unbounded,
		Classes: []bulkhead.ClassConfig{
			{Name: "interactive", MaxWaitDuration: time.Second, MaxQueuedCalls: bulkhead.Unbounded},
			{Name: "batch", MaxWaitDuration: time.Minute, MaxQueuedCalls: bulkhead.Unbounded},
		},
	})
	walmart, _ := bulkhead.New("walmart", bulkhead.Config{MaxConcurrentCalls: 20})
	partner, _ := hub.Partner(walmart, bulkhead.PartnerOptions{})
	batch, _ := hub.Class("batch")

	bigDocument := partner.Call(batch, 8)
	if bigDocument.AcquirePermissionAsync().Granted() {
		fmt.Println(walmart.Metrics().InFlightCalls, hub.Metrics().InUse)
		bigDocument.FinishCall() // the same class and weight go back
	}
	fmt.Println(walmart.Metrics().InFlightCalls, hub.Metrics().InUse)
	err := partner.Call(batch, 25).AcquirePermissionAsync().Err()
	fmt.Println(errors.Is(err, bulkhead.ErrTooHeavy), err)
	// Output:
	// 8 8
	// 0 0
	// true bulkhead "walmart": a call of weight 25 is heavier than its MaxConcurrentCalls of 20
}

// Classes by name, resolved once; the zero Class is the partner's own.
func ExampleBudget_Class() {
	hub, _ := bulkhead.NewBudget("hub", bulkhead.BudgetConfig{
		Size:    10,
		Classes: []bulkhead.ClassConfig{{Name: "critical"}, {Name: "sheddable"}},
	})
	critical, err := hub.Class("critical")
	fmt.Println(critical.Name(), err)
	_, err = hub.Class("urgent")
	fmt.Println(err)
	// Output:
	// critical <nil>
	// bulkhead "hub": invalid config: Class must name one of the budget's classes, got urgent
}

// A flow needs the budget only: here the hub's own housekeeping jobs, which
// have no partner bulkhead, draw on a guaranteed group share.
func ExampleBudget_Flow() {
	hub, _ := bulkhead.NewBudget("hub", bulkhead.BudgetConfig{
		Size:    100,
		Classes: []bulkhead.ClassConfig{{Name: "normal"}},
		Groups:  []bulkhead.GroupConfig{{Name: "housekeeping", Nominal: 5, Lendable: 5, BorrowingLimit: 0}},
	})
	jobs, _ := hub.Flow("housekeeping", bulkhead.PartnerOptions{Group: "housekeeping"})
	var granted []bool
	for range 6 {
		granted = append(granted, jobs.AcquirePermissionAsync().Granted())
	}
	fmt.Println(granted)
	m := hub.Metrics()
	fmt.Println(m.InUse, m.Groups[0].Name, m.Groups[0].InUse)
	for range 5 {
		jobs.FinishCall()
	}
	// Output:
	// [true true true true true false]
	// 5 housekeeping 5
}

// Joining a partner: its calls take a permit of its own bulkhead, then
// permits of the budget; a gold partner draws on the gold group's share.
func ExampleBudget_Partner() {
	hub, _ := bulkhead.NewBudget("hub", bulkhead.BudgetConfig{
		Size:    100,
		Classes: []bulkhead.ClassConfig{{Name: "normal"}},
		Groups:  []bulkhead.GroupConfig{{Name: "gold", Nominal: 30, Lendable: 20, BorrowingLimit: bulkhead.Unbounded}},
	})
	walmart, _ := bulkhead.New("walmart", bulkhead.Config{MaxConcurrentCalls: 20})
	gold, err := hub.Partner(walmart, bulkhead.PartnerOptions{Group: "gold"})
	fmt.Println(gold.Name(), err)
	_, err = hub.Partner(walmart, bulkhead.PartnerOptions{Group: "silver"})
	fmt.Println(err)
	// Output:
	// walmart <nil>
	// bulkhead "hub": invalid config: PartnerOptions.Group must name one of the budget's groups, got silver
}

// ChangeConfig changes a live budget: here a larger size lets the waiting
// call in at once.
func ExampleBudget_ChangeConfig() {
	cfg := bulkhead.BudgetConfig{
		Size:           1,
		MaxQueuedCalls: bulkhead.Unbounded,
		Classes:        []bulkhead.ClassConfig{{Name: "normal", MaxWaitDuration: time.Minute, MaxQueuedCalls: bulkhead.Unbounded}},
	}
	hub, _ := bulkhead.NewBudget("hub", cfg)
	flow, _ := hub.Flow("acme", bulkhead.PartnerOptions{})
	flow.AcquirePermissionAsync()
	waiting := flow.AcquirePermissionAsync()
	fmt.Println(waiting.Err())
	cfg.Size = 2
	if err := hub.ChangeConfig(cfg); err != nil {
		panic(err)
	}
	fmt.Println(waiting.Err())
	flow.FinishCall()
	flow.FinishCall()
	// Output:
	// bulkhead: permit acquisition pending
	// <nil>
}

// Events say which partner, class and weight, and how long a call waited
// in the budget (here on a virtual clock).
func ExampleBudget_OnEvent() {
	clock := testkit.NewVirtualClock(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
	hub, _ := bulkhead.NewBudget("hub", bulkhead.BudgetConfig{
		Size:           4,
		MaxQueuedCalls: bulkhead.Unbounded,
		Classes:        []bulkhead.ClassConfig{{Name: "batch", MaxWaitDuration: time.Minute, MaxQueuedCalls: bulkhead.Unbounded}},
	}, bulkhead.WithClock(clock))
	hub.OnEvent(func(e bulkhead.BudgetEvent) { fmt.Println(e) })
	acme, _ := hub.Flow("acme", bulkhead.PartnerOptions{})
	acme.Call(bulkhead.Class{}, 4).AcquirePermissionAsync()
	acme.Call(bulkhead.Class{}, 2).AcquirePermissionAsync()
	clock.Advance(3 * time.Second)
	acme.Call(bulkhead.Class{}, 4).FinishCall()
	acme.Call(bulkhead.Class{}, 2).FinishCall()
	// Output:
	// 2026-12-01T09:00:00Z budget "hub": partner "acme" class "batch" weight 4: permitted
	// 2026-12-01T09:00:03Z budget "hub": partner "acme" class "batch" weight 4: finished
	// 2026-12-01T09:00:03Z budget "hub": partner "acme" class "batch" weight 2: permitted after waiting 3s
	// 2026-12-01T09:00:03Z budget "hub": partner "acme" class "batch" weight 2: finished
}

// Metrics is a consistent snapshot: permits in use and calls waiting, in
// all and per class and group (a group's Queued counts its partners' calls
// waiting in the budget).
func ExampleBudget_Metrics() {
	hub, _ := bulkhead.NewBudget("hub", bulkhead.BudgetConfig{
		Size:           3,
		MaxQueuedCalls: bulkhead.Unbounded,
		Classes: []bulkhead.ClassConfig{
			{Name: "interactive", MaxWaitDuration: time.Second, MaxQueuedCalls: bulkhead.Unbounded},
			{Name: "batch", MaxWaitDuration: time.Minute, MaxQueuedCalls: bulkhead.Unbounded},
		},
		Groups: []bulkhead.GroupConfig{{Name: "gold", Nominal: 1, Lendable: 0, BorrowingLimit: bulkhead.Unbounded}},
	})
	acme, _ := hub.Flow("acme", bulkhead.PartnerOptions{Class: "batch"})
	globex, _ := hub.Flow("globex", bulkhead.PartnerOptions{Group: "gold", Class: "interactive"})
	acme.Call(bulkhead.Class{}, 2).AcquirePermissionAsync()
	waiting := acme.Call(bulkhead.Class{}, 1).AcquirePermissionAsync()       // the last permit is gold's reserve
	goldWaiting := globex.Call(bulkhead.Class{}, 2).AcquirePermissionAsync() // gold's reserve is 1 permit
	m := hub.Metrics()
	fmt.Printf("size %d, in use %d, free %d, queued %d\n", m.Size, m.InUse, m.Free, m.Queued)
	fmt.Printf("%+v\n%+v\n", m.Classes, m.Groups)
	waiting.Cancel()
	goldWaiting.Cancel()
	acme.Call(bulkhead.Class{}, 2).FinishCall()
	// Output:
	// size 3, in use 2, free 1, queued 2
	// [{Name:interactive InUse:0 Queued:1} {Name:batch InUse:2 Queued:1}]
	// [{Name:gold InUse:0 Queued:1 Reserved:1}]
}

// The blocking form waits for both levels, bounded by the context.
func ExampleBudgetCall_AcquirePermission() {
	hub, _ := bulkhead.NewBudget("hub", bulkhead.BudgetConfig{
		Size:           1,
		MaxQueuedCalls: bulkhead.Unbounded,
		Classes:        []bulkhead.ClassConfig{{Name: "normal", MaxWaitDuration: time.Minute, MaxQueuedCalls: bulkhead.Unbounded}},
	})
	acme, _ := hub.Flow("acme", bulkhead.PartnerOptions{})
	call := acme.Call(bulkhead.Class{}, 1)
	fmt.Println(call.AcquirePermission(context.Background()))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	fmt.Println(call.AcquirePermission(ctx)) // the permit is held: withdrawn when ctx ends
	call.FinishCall()
	fmt.Println(hub.Metrics().Queued, hub.Metrics().InUse)
	// Output:
	// <nil>
	// context deadline exceeded
	// 0 0
}

// A call heavier than the budget could ever grant is refused at once, with
// an error that is not a full bulkhead's.
func ExampleWeightError() {
	hub, _ := bulkhead.NewBudget("hub", bulkhead.BudgetConfig{Size: 10, Classes: []bulkhead.ClassConfig{{Name: "batch"}}})
	acme, _ := hub.Flow("acme", bulkhead.PartnerOptions{})
	err := acme.Call(bulkhead.Class{}, 12).AcquirePermissionAsync().Err()
	fmt.Println(err)
	fmt.Println(errors.Is(err, bulkhead.ErrTooHeavy), errors.Is(err, bulkhead.ErrBulkheadFull))
	// Output:
	// budget "hub": a call of weight 12 (partner "acme", class "batch") is heavier than the 10 permits the budget can grant it
	// true false
}

// Validate reports every bad field at once, each named by its index.
func ExampleBudgetConfig_Validate() {
	err := bulkhead.BudgetConfig{
		Size:    10,
		Classes: []bulkhead.ClassConfig{{Name: "critical", Share: 8}, {Name: "batch", Share: 8}},
		Groups:  []bulkhead.GroupConfig{{Name: "gold", Nominal: 4, Lendable: 5, BorrowingLimit: 1}},
	}.Validate()
	fmt.Println(err)
	// Output:
	// bulkhead: invalid config: Classes shares must add up to at most Size (10), got 16
	// bulkhead: invalid config: Groups[0].Lendable must be between 0 and Nominal (4), got 5
}
