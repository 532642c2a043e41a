package fileconfig_test

import (
	"encoding/json"
	"fmt"
	"log"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/fileconfig"
)

// A registry built from a JSON file: named base configs, per-instance
// overrides, human durations.
func ExampleNewRegistry() {
	data := []byte(`{
	  "configs": {
	    "default": {"maxConcurrentCalls": 20, "maxWaitDuration": "50ms", "maxQueuedCalls": 100},
	    "big":     {"baseConfig": "default", "maxConcurrentCalls": 60}
	  },
	  "instances": {
	    "walmart":   {"baseConfig": "big"},
	    "carrefour": {"maxWaitDuration": "0s"}
	  }
	}`)
	var file fileconfig.File
	if err := json.Unmarshal(data, &file); err != nil {
		panic(err)
	}
	registry, err := fileconfig.NewRegistry(file)
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

// Reloading a file changes the live bulkheads with ChangeConfig.
func ExampleApply() {
	load := func(doc string) (fileconfig.File, error) {
		var file fileconfig.File
		err := json.Unmarshal([]byte(doc), &file)
		return file, err
	}
	file, _ := load(`{"instances": {"walmart": {"maxConcurrentCalls": 20}}}`)
	registry, _ := fileconfig.NewRegistry(file)
	walmart, _ := registry.Find("walmart")

	// Later, the file changes: walmart gets 40 permits.
	file, err := load(`{"instances": {"walmart": {"maxConcurrentCalls": 40}}}`)
	if err == nil {
		err = fileconfig.Apply(registry, file)
	}
	fmt.Println(walmart.Metrics().MaxAllowedConcurrentCalls, err)

	// A bad file is refused as a whole and changes nothing.
	file, err = load(`{"instances": {"walmart": {"maxConcurrentCalls": 0}}}`)
	if err == nil {
		err = fileconfig.Apply(registry, file)
	}
	fmt.Println(walmart.Metrics().MaxAllowedConcurrentCalls, err)
	// Output:
	// 40 <nil>
	// 40 bulkhead "walmart": maxConcurrentCalls 0: must be >= 1
}

// A file fails with every problem it has, each naming the entry, the key
// and the value.
func ExampleDecode_errors() {
	var file fileconfig.File
	err := json.Unmarshal([]byte(`{
	  "configs":   {"big": {"baseConfig": "huge", "maxConcurrentCalls": 60}},
	  "instances": {"a": {"maxQueuedCalls": -1}, "b": {"maxWaitDuration": 50}}
	}`), &file)
	fmt.Println(err)
	// Output:
	// bulkhead config "big": baseConfig "huge": no such config (known: big)
	// bulkhead "a": maxQueuedCalls -1: must be >= 0
	// bulkhead "b": maxWaitDuration 50: not a duration: want a number with a unit, such as "50ms" or "0s"
}

// Decode reads the generic maps that any decoder produces, here the
// settings of a hypothetical TOML or viper source, keyed in kebab case.
func ExampleDecode() {
	settings := map[string]any{
		"instances": map[string]any{
			"walmart": map[string]any{"max-concurrent-calls": int64(30), "max-wait-duration": "100ms", "max-queued-calls": "unbounded"},
		},
	}
	file, err := fileconfig.Decode(settings)
	if err != nil {
		panic(err)
	}
	resolved, err := file.Resolve()
	if err != nil {
		panic(err)
	}
	fmt.Println(resolved.Instances["walmart"].Config)
	// Output: {MaxConcurrentCalls:30 MaxWaitDuration:100ms MaxQueuedCalls:Unbounded QueueOrder:FIFO}
}

// A File can be written in Go too: a nil field inherits, a set one
// overrides (new(60) is a *int). Resolve checks it.
func ExampleSpec() {
	file := fileconfig.File{
		Configs: map[string]fileconfig.Spec{
			"default": {MaxConcurrentCalls: new(20), MaxWaitDuration: new(fileconfig.Duration(50 * time.Millisecond)), MaxQueuedCalls: new(100)},
			"big":     {BaseConfig: "default", MaxConcurrentCalls: new(60)},
		},
		Instances: map[string]fileconfig.Spec{
			"walmart": {BaseConfig: "big", QueueOrder: new(bulkhead.LIFO), MaxQueuedCalls: new(bulkhead.Unbounded)},
		},
	}
	resolved, err := file.Resolve()
	if err != nil {
		panic(err)
	}
	fmt.Println(resolved.Instances["walmart"].Config)
	// Output: {MaxConcurrentCalls:60 MaxWaitDuration:50ms MaxQueuedCalls:Unbounded QueueOrder:LIFO}
}

// Reloading the file on SIGHUP. A file that does not load is logged and
// ignored: the registry keeps its configuration.
func ExampleApply_onSignal() {
	load := func(path string) (fileconfig.File, error) {
		var file fileconfig.File
		data, err := os.ReadFile(path)
		if err != nil {
			return file, err
		}
		return file, json.Unmarshal(data, &file)
	}

	file, err := load("bulkheads.json")
	if err != nil {
		log.Fatal(err)
	}
	registry, err := fileconfig.NewRegistry(file)
	if err != nil {
		log.Fatal(err)
	}

	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	go func() {
		for range hup {
			file, err := load("bulkheads.json")
			if err == nil {
				err = fileconfig.Apply(registry, file)
			}
			if err != nil {
				log.Printf("bulkheads.json not reloaded: %v", err)
			}
		}
	}()
}

// A hub with 500 partners: three tiers of configs, one instance per
// partner. In production the instances come from the file; here they are
// generated.
func ExampleNewRegistry_partners() {
	file := fileconfig.File{
		Configs: map[string]fileconfig.Spec{
			"default": {MaxConcurrentCalls: new(10), MaxWaitDuration: new(fileconfig.Duration(50 * time.Millisecond)), MaxQueuedCalls: new(50)},
			"large":   {MaxConcurrentCalls: new(60), MaxQueuedCalls: new(200)},
			"fragile": {MaxConcurrentCalls: new(2), MaxWaitDuration: new(fileconfig.Duration(0))},
		},
		Instances: map[string]fileconfig.Spec{},
	}
	for i := range 500 {
		spec := fileconfig.Spec{}
		switch {
		case i < 20:
			spec.BaseConfig = "large"
		case i%50 == 0:
			spec.BaseConfig = "fragile"
		}
		file.Instances[fmt.Sprintf("partner-%03d", i)] = spec
	}
	registry, err := fileconfig.NewRegistry(file)
	if err != nil {
		panic(err)
	}
	permits := 0
	for _, bh := range registry.All() {
		permits += bh.Metrics().MaxAllowedConcurrentCalls
	}
	fmt.Println(len(registry.All()), "bulkheads,", permits, "permits")
	// Output: 500 bulkheads, 5928 permits
}

// Resolve checks a File built in Go, with the rules and messages of a file:
// here a base that does not exist and a wait without a queue.
func ExampleFile_Resolve() {
	file := fileconfig.File{
		Configs: map[string]fileconfig.Spec{
			"nowait": {MaxQueuedCalls: new(0)},
		},
		Instances: map[string]fileconfig.Spec{
			"walmart":   {BaseConfig: "huge"},
			"carrefour": {BaseConfig: "nowait", MaxWaitDuration: new(fileconfig.Duration(time.Second))},
		},
	}
	_, err := file.Resolve()
	fmt.Println(err)
	// Output:
	// bulkhead "carrefour": maxQueuedCalls 0: must be >= 1 when MaxWaitDuration is positive (bulkhead.Unbounded for no bound)
	// bulkhead "walmart": baseConfig "huge": no such config (known: nowait)
}
