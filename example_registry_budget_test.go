package bulkhead_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/rxbulkhead/bulkhead"
)

// A registry whose every partner's bulkhead is joined to the hub's budget:
// a keyed call takes Weight permits of its key's bulkhead and then as many
// of the budget, of the class it names, and its Lease gives both back. The
// partners of the "gold-" keys draw on the gold group's share.
func ExampleWithBudget() {
	hub, _ := bulkhead.NewBudget("hub", bulkhead.BudgetConfig{
		Size:           100,
		MaxQueuedCalls: bulkhead.Unbounded,
		Classes: []bulkhead.ClassConfig{
			{Name: "interactive", MaxWaitDuration: time.Second, MaxQueuedCalls: bulkhead.Unbounded},
			{Name: "batch", MaxWaitDuration: time.Minute, MaxQueuedCalls: bulkhead.Unbounded},
		},
		Groups: []bulkhead.GroupConfig{{Name: "gold", Nominal: 40, BorrowingLimit: bulkhead.Unbounded}},
	})
	partners, _ := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 20},
		bulkhead.WithIdleTimeout(10*time.Minute),
		bulkhead.WithBudget(hub, func(key string) bulkhead.PartnerOptions {
			if strings.HasPrefix(key, "gold-") {
				return bulkhead.PartnerOptions{Group: "gold"}
			}
			return bulkhead.PartnerOptions{}
		}))

	// A 10 MB batch document costs 8 permits of the hub and 8 of the partner's.
	lease, err := partners.TryAcquirePermission("gold-walmart", bulkhead.CallOptions{Class: "batch", Weight: 8})
	if err != nil {
		fmt.Println(err)
		return
	}
	m := hub.Metrics()
	fmt.Println("hub in use:", m.InUse, "gold:", m.Groups[0].InUse)
	lease.FinishCall() // both levels back
	fmt.Println("hub in use:", hub.Metrics().InUse)
	// Output:
	// hub in use: 8 gold: 8
	// hub in use: 0
}

// A request's class travels in its context: the HTTP and gRPC integrations
// read it there, give the call that class of the budget, and send it to
// the next hop as failsafe-go's X-Failsafe-Priority.
func ExampleWithPriority() {
	ctx := bulkhead.WithPriority(context.Background(), "critical")
	fmt.Println(bulkhead.PriorityFrom(ctx))
	fmt.Println(bulkhead.PriorityHeader+":", bulkhead.DefaultPriorityClasses.Value(bulkhead.PriorityFrom(ctx)))
	// Output:
	// critical
	// X-Failsafe-Priority: 3
}

// failsafe-go's five priorities (0 very low to 4 very high) mapped to a
// hub's own class names; anything else on the wire maps to none, and the
// call keeps its partner's class.
func ExamplePriorityClasses() {
	m := bulkhead.PriorityClasses{"batch", "batch", "interactive", "interactive", "interactive"}
	fmt.Printf("%q %q %q %q\n", m.Class("4"), m.Class("0"), m.Class("9"), m.ClassOfLevel("250"))
	fmt.Printf("%q %q\n", m.Value("batch"), m.Value("unknown"))
	// Output:
	// "interactive" "batch" "" "interactive"
	// "0" ""
}
