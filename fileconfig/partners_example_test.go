package fileconfig_test

import (
	"encoding/json"
	"fmt"
	"log"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/fileconfig"
)

// A registry built from a file joins the file's budget: the top-level
// budget key names it, and each config or instance the group and class its
// bulkheads join it with. A reload keeps them.
func ExampleBudgets_NewRegistry() {
	load := func(doc string) fileconfig.File {
		var file fileconfig.File
		if err := json.Unmarshal([]byte(doc), &file); err != nil {
			log.Fatal(err)
		}
		return file
	}
	file := load(`{
	  "budget": "hub",
	  "budgets": {"hub": {"size": 100,
	    "classes": [{"name": "interactive"}, {"name": "batch", "share": 10}],
	    "groups": [{"name": "gold", "nominal": 40, "borrowingLimit": "unbounded"}]}},
	  "configs": {
	    "default": {"maxConcurrentCalls": 20, "class": "interactive"},
	    "gold": {"maxConcurrentCalls": 60, "group": "gold"}},
	  "instances": {"walmart": {"baseConfig": "gold"}, "archive": {"class": "batch"}}
	}`)
	budgets, err := fileconfig.NewBudgets(file)
	if err != nil {
		log.Fatal(err)
	}
	partners, err := budgets.NewRegistry(file)
	if err != nil {
		log.Fatal(err)
	}
	hub, _ := budgets.Get("hub")

	// walmart draws on gold's share; its call of weight 8 is interactive.
	lease, err := partners.TryAcquirePermission("walmart", bulkhead.CallOptions{Weight: 8})
	if err != nil {
		log.Fatal(err)
	}
	m := hub.Metrics()
	fmt.Println("gold:", m.Groups[0].InUse, "interactive:", m.Classes[0].InUse)
	lease.FinishCall()

	// A reload may change the bulkheads and the budget, not who is in
	// which group or class.
	err = fileconfig.Apply(partners, load(`{"budget": "hub",
	  "budgets": {"hub": {"size": 100, "classes": [{"name": "interactive"}, {"name": "batch", "share": 10}],
	    "groups": [{"name": "gold", "nominal": 40, "borrowingLimit": "unbounded"}]}},
	  "instances": {"archive": {"class": "interactive"}}}`))
	fmt.Println(err)
	// Output:
	// gold: 8 interactive: 8
	// bulkhead "archive": class "interactive": the registry was built with the class "batch" here, and keeps it: restart with the new file to change it
}
