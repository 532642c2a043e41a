package fileconfig_test

import (
	"encoding/json"
	"fmt"
	"log"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/fileconfig"
)

// The hub's budget from the file's "budgets" section; partners join it by
// name, and a reload changes it live but may not drop a class.
func ExampleNewBudgets() {
	load := func(doc string) fileconfig.File {
		var file fileconfig.File
		if err := json.Unmarshal([]byte(doc), &file); err != nil {
			log.Fatal(err)
		}
		return file
	}
	file := load(`{"budgets": {"hub": {
	  "size": 1000, "maxQueuedCalls": "unbounded", "maxBypass": 100,
	  "classes": [
	    {"name": "interactive", "headroom": 20, "maxWaitDuration": "1s", "maxQueuedCalls": "unbounded"},
	    {"name": "batch", "share": 50, "maxWaitDuration": "1m", "maxQueuedCalls": "unbounded"}
	  ],
	  "groups": [{"name": "gold", "nominal": 300, "lendable": 200, "borrowingLimit": "unbounded"}]
	}}}`)
	budgets, err := fileconfig.NewBudgets(file)
	if err != nil {
		log.Fatal(err)
	}
	hub, _ := budgets.Get("hub")
	walmart, _ := bulkhead.New("walmart", bulkhead.Config{MaxConcurrentCalls: 20})
	partner, _ := hub.Partner(walmart, bulkhead.PartnerOptions{Group: "gold", Class: "interactive"})
	fmt.Println(partner.Name(), hub.Metrics().Size)

	// Later, the file changes: the hub grows.
	err = budgets.Apply(load(`{"budgets": {"hub": {
	  "size": 1200, "maxQueuedCalls": "unbounded", "maxBypass": 100,
	  "classes": [
	    {"name": "interactive", "headroom": 20, "maxWaitDuration": "1s", "maxQueuedCalls": "unbounded"},
	    {"name": "batch", "share": 50, "maxWaitDuration": "1m", "maxQueuedCalls": "unbounded"}
	  ]
	}}}`))
	fmt.Println(hub.Metrics().Size, err)

	// A reload that drops a class is refused and changes nothing.
	err = budgets.Apply(load(`{"budgets": {"hub": {"size": 1500, "classes": [{"name": "interactive"}]}}}`))
	fmt.Println(hub.Metrics().Size, err)
	// Output:
	// walmart 1000
	// 1200 <nil>
	// 1200 bulkhead budget "hub": classes: drops the class "batch" of the live budget: a live budget cannot lose a class (keep it, or restart with the new file)
}
