package bulkhead_test

import (
	"fmt"
	"strings"
	"time"

	"github.com/rxbulkhead/bulkhead"
)

// A registry whose every partner's bulkhead is joined to the hub's budget:
// a keyed call takes its key's permit and then Weight permits of the
// budget, of the class it names, and its Lease gives both back. The
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

	// A 10 MB batch document costs 8 permits of the hub, 1 of the partner's.
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
