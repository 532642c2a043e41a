package bulkhead_test

import (
	"encoding/json"
	"fmt"
	"log"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/rxbulkhead/bulkhead"
)

// A registry built from a JSON file: named base configs, per-instance
// overrides, human durations.
func ExampleNewRegistryFromConfig() {
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
	var rc bulkhead.RegistryConfig
	if err := json.Unmarshal(data, &rc); err != nil {
		panic(err)
	}
	registry, err := bulkhead.NewRegistryFromConfig(rc)
	if err != nil {
		panic(err)
	}
	for _, bh := range registry.All() {
		fmt.Printf("%s: %+v\n", bh.Name(), bh.Config())
	}
	// Output:
	// carrefour: {MaxConcurrentCalls:20 MaxWaitDuration:0s MaxQueuedCalls:100 QueueOrder:FIFO}
	// walmart: {MaxConcurrentCalls:60 MaxWaitDuration:50ms MaxQueuedCalls:100 QueueOrder:FIFO}
}

// Reloading a file changes the live bulkheads with ChangeConfig.
func ExampleRegistry_Apply() {
	load := func(doc string) bulkhead.RegistryConfig {
		var rc bulkhead.RegistryConfig
		if err := json.Unmarshal([]byte(doc), &rc); err != nil {
			panic(err)
		}
		return rc
	}
	registry, _ := bulkhead.NewRegistryFromConfig(load(`{"instances": {"walmart": {"maxConcurrentCalls": 20}}}`))
	walmart, _ := registry.Find("walmart")

	// Later, the file changes: walmart gets 40 permits.
	if err := registry.Apply(load(`{"instances": {"walmart": {"maxConcurrentCalls": 40}}}`)); err != nil {
		fmt.Println("reload refused:", err)
	}
	fmt.Println(walmart.Metrics().MaxAllowedConcurrentCalls)

	// A bad file is refused as a whole and changes nothing.
	err := registry.Apply(load(`{"instances": {"walmart": {"maxConcurrentCalls": 0}}}`))
	fmt.Println(err)
	fmt.Println(walmart.Metrics().MaxAllowedConcurrentCalls)
	// Output:
	// 40
	// bulkhead: instance "walmart": maxConcurrentCalls 0: must be >= 1
	// 40
}

// Errors name the entry, the key and the value.
func ExampleRegistryConfig_Resolve() {
	var rc bulkhead.RegistryConfig
	err := json.Unmarshal([]byte(`{"instances": {"walmart": {"maxWaitDuration": 50}}}`), &rc)
	fmt.Println(err)

	rc = bulkhead.RegistryConfig{
		Configs: map[string]bulkhead.ConfigSpec{
			"big": {BaseConfig: "huge", MaxConcurrentCalls: new(60)},
		},
	}
	_, err = rc.Resolve()
	fmt.Println(err)
	// Output:
	// bulkhead: instance "walmart": maxWaitDuration 50: not a duration: want a number with a unit, such as "50ms" or "0s"
	// bulkhead: config "big": baseConfig "huge": no such config (known: big)
}

// DecodeRegistryConfig reads the generic maps that any decoder produces, here
// the settings of a hypothetical TOML or viper source, keyed in kebab case.
func ExampleDecodeRegistryConfig() {
	settings := map[string]any{
		"instances": map[string]any{
			"walmart": map[string]any{"max-concurrent-calls": int64(30), "max-wait-duration": "100ms"},
		},
	}
	rc, err := bulkhead.DecodeRegistryConfig(settings)
	if err != nil {
		panic(err)
	}
	resolved, err := rc.Resolve()
	if err != nil {
		panic(err)
	}
	fmt.Printf("%+v\n", resolved.Instances["walmart"])
	// Output: {MaxConcurrentCalls:30 MaxWaitDuration:100ms MaxQueuedCalls:Unbounded QueueOrder:FIFO}
}

// A RegistryConfig can be written in Go too: a nil field inherits, a set one
// overrides (new(60) is a *int).
func ExampleConfigSpec() {
	rc := bulkhead.RegistryConfig{
		Configs: map[string]bulkhead.ConfigSpec{
			"default": {MaxConcurrentCalls: new(20), MaxWaitDuration: new(bulkhead.Duration(50 * time.Millisecond))},
			"big":     {BaseConfig: "default", MaxConcurrentCalls: new(60)},
		},
		Instances: map[string]bulkhead.ConfigSpec{
			"walmart": {BaseConfig: "big", QueueOrder: new(bulkhead.LIFO)},
		},
	}
	resolved, err := rc.Resolve()
	if err != nil {
		panic(err)
	}
	fmt.Printf("%+v\n", resolved.Instances["walmart"])
	// Output: {MaxConcurrentCalls:60 MaxWaitDuration:50ms MaxQueuedCalls:Unbounded QueueOrder:LIFO}
}

// Reloading the file on SIGHUP. A file that does not load is logged and
// ignored: the registry keeps its configuration.
func ExampleRegistry_Apply_onSignal() {
	load := func(path string) (bulkhead.RegistryConfig, error) {
		var rc bulkhead.RegistryConfig
		data, err := os.ReadFile(path)
		if err != nil {
			return rc, err
		}
		return rc, json.Unmarshal(data, &rc)
	}

	rc, err := load("bulkheads.json")
	if err != nil {
		log.Fatal(err)
	}
	registry, err := bulkhead.NewRegistryFromConfig(rc)
	if err != nil {
		log.Fatal(err)
	}

	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	go func() {
		for range hup {
			rc, err := load("bulkheads.json")
			if err == nil {
				err = registry.Apply(rc)
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
func ExampleNewRegistryFromConfig_partners() {
	rc := bulkhead.RegistryConfig{
		Configs: map[string]bulkhead.ConfigSpec{
			"default": {MaxConcurrentCalls: new(10), MaxWaitDuration: new(bulkhead.Duration(50 * time.Millisecond)), MaxQueuedCalls: new(50)},
			"large":   {MaxConcurrentCalls: new(60), MaxQueuedCalls: new(200)},
			"fragile": {MaxConcurrentCalls: new(2), MaxWaitDuration: new(bulkhead.Duration(0))},
		},
		Instances: map[string]bulkhead.ConfigSpec{},
	}
	for i := range 500 {
		spec := bulkhead.ConfigSpec{}
		switch {
		case i < 20:
			spec.BaseConfig = "large"
		case i%50 == 0:
			spec.BaseConfig = "fragile"
		}
		rc.Instances[fmt.Sprintf("partner-%03d", i)] = spec
	}
	registry, err := bulkhead.NewRegistryFromConfig(rc)
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
