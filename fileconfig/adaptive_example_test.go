package fileconfig_test

import (
	"encoding/json"
	"fmt"

	"github.com/rxbulkhead/bulkhead/fileconfig"
)

// An adaptive section makes a bulkhead's limit follow its partner.
func ExampleWatchAdaptive() {
	data := []byte(`{
	  "configs":   {"default": {"maxConcurrentCalls": 20}},
	  "instances": {"walmart": {"adaptive": {"algorithm": "gradient2", "min": 5, "max": 200}},
	                "target":  {}}
	}`)
	var file fileconfig.File
	if err := json.Unmarshal(data, &file); err != nil {
		panic(err)
	}
	registry, err := fileconfig.NewRegistry(file)
	if err != nil {
		panic(err)
	}
	partners, err := fileconfig.WatchAdaptive(registry, file)
	if err != nil {
		panic(err)
	}
	defer partners.Stop()
	for _, b := range partners.All() {
		fmt.Println(b.Name(), "adapts from", b.Stats().Limit)
	}
	// Output:
	// walmart adapts from 20
}
