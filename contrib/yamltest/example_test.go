package yamltest_test

import (
	"fmt"

	"go.yaml.in/yaml/v3"

	"github.com/rxbulkhead/bulkhead/fileconfig"
)

// Loading the registry configuration from YAML: the core package has no
// YAML dependency, any of the usual libraries decodes its types.
func Example_loadYAML() {
	data := []byte(`
configs:
  default: { maxConcurrentCalls: 20, maxWaitDuration: 50ms, maxQueuedCalls: 100 }
  big:     { baseConfig: default, maxConcurrentCalls: 60 }
instances:
  walmart:   { baseConfig: big }
  carrefour: { maxWaitDuration: 0s }
`)
	var f fileconfig.File
	if err := yaml.Unmarshal(data, &f); err != nil {
		panic(err)
	}
	registry, err := fileconfig.NewRegistry(f)
	if err != nil {
		panic(err)
	}
	for _, bh := range registry.All() {
		fmt.Printf("%s: %v\n", bh.Name(), bh.Config())
	}
	// Output:
	// carrefour: {MaxConcurrentCalls:20 MaxWaitDuration:0s MaxQueuedCalls:100 QueueOrder:FIFO}
	// walmart: {MaxConcurrentCalls:60 MaxWaitDuration:50ms MaxQueuedCalls:100 QueueOrder:FIFO}
}

// The bulkheads as one section of an application's own YAML file. Errors
// name the instance, the key and the value.
func Example_applicationFile() {
	type appConfig struct {
		Listen    string          `yaml:"listen"`
		Bulkheads fileconfig.File `yaml:"bulkheads"`
	}
	data := []byte(`
listen: ":8080"
bulkheads:
  instances:
    walmart: { maxConcurrentCalls: 20, maxWaitDuration: 50 }
`)
	var app appConfig
	err := yaml.Unmarshal(data, &app)
	fmt.Println(err)
	// Output:
	// bulkhead "walmart": maxWaitDuration 50: not a duration: want a number with a unit, such as "50ms" or "0s"
}
