package fileconfig

import (
	"fmt"
	"time"

	"github.com/rxbulkhead/bulkhead"
)

// File is the configuration of a bulkhead.Registry as it is written in a
// file, in the shape of resilience4j's Spring properties:
//
//	configs:
//	  default: { maxConcurrentCalls: 20, maxWaitDuration: 50ms, maxQueuedCalls: 100 }
//	  big:     { baseConfig: default, maxConcurrentCalls: 60 }
//	instances:
//	  walmart:   { baseConfig: big }
//	  carrefour: { maxWaitDuration: 0s }
//
// Configs are named base configurations (the one named "default" is the
// registry's default); Instances are bulkheads, created eagerly by
// NewRegistry and Apply. Decoding a File from JSON or YAML goes through
// Decode, which checks the whole file (shape, inheritance and the rules of
// bulkhead.Config) and reports every problem at once; a File built in Go is
// checked by Resolve.
type File struct {
	// Configs are the named base configurations.
	Configs map[string]Spec `json:"configs,omitempty" yaml:"configs,omitempty"`
	// Instances are the bulkheads, by name.
	Instances map[string]Spec `json:"instances,omitempty" yaml:"instances,omitempty"`
	// Budgets are hub budgets (bulkhead.Budget), by name: see BudgetSpec
	// and NewBudgets. NewRegistry does not read them; Budgets.NewRegistry
	// joins the one Budget names, and Apply checks that a reload keeps the
	// groups its registry uses.
	Budgets map[string]BudgetSpec `json:"budgets,omitempty" yaml:"budgets,omitempty"`
	// Budget names the budget (one of Budgets) that every bulkhead of the
	// registry joins, each with the group and class of its entry (Spec.Group,
	// Spec.Class): Budgets.NewRegistry builds such a registry; NewRegistry
	// refuses a file that names one. Empty: the registry has no budget.
	Budget string `json:"budget,omitempty" yaml:"budget,omitempty"`
}

// Spec is one entry of a File: a named config or an instance. Only the
// fields that are set (non-nil) override what the entry inherits, so an
// explicit zero ("maxQueuedCalls: 0", no queue) overrides too.
//
// An entry inherits from BaseConfig if it names one, otherwise from the
// config named "default" if the file has one (and the entry is not that
// config itself), otherwise from bulkhead.DefaultConfig(). This is
// resilience4j's rule.
//
// The package documentation says how a setting is added.
type Spec struct {
	// BaseConfig names the config (under File.Configs) to inherit from.
	// Empty: inherit from "default" as described above.
	BaseConfig string `json:"baseConfig,omitempty" yaml:"baseConfig,omitempty"`
	// MaxConcurrentCalls overrides Config.MaxConcurrentCalls. Files may
	// write "unbounded" for bulkhead.Unbounded.
	MaxConcurrentCalls *int `json:"maxConcurrentCalls,omitempty" yaml:"maxConcurrentCalls,omitempty"`
	// MaxWaitDuration overrides Config.MaxWaitDuration.
	MaxWaitDuration *Duration `json:"maxWaitDuration,omitempty" yaml:"maxWaitDuration,omitempty"`
	// MaxQueuedCalls overrides Config.MaxQueuedCalls: 0 is no queue; files
	// may write "unbounded" for bulkhead.Unbounded.
	MaxQueuedCalls *int `json:"maxQueuedCalls,omitempty" yaml:"maxQueuedCalls,omitempty"`
	// QueueOrder overrides Config.QueueOrder.
	QueueOrder *bulkhead.QueueOrder `json:"queueOrder,omitempty" yaml:"queueOrder,omitempty"`
	// ShadowMode overrides Config.ShadowMode: true lets every call through
	// and counts what the limit would have done (see bulkhead.Config).
	ShadowMode *bool `json:"shadowMode,omitempty" yaml:"shadowMode,omitempty"`
	// Store overrides where the permits live (see Store); nil inherits.
	Store *Store `json:"store,omitempty" yaml:"store,omitempty"`
	// Adaptive makes the bulkhead's limit adaptive (see AdaptiveSpec).
	Adaptive *AdaptiveSpec `json:"adaptive,omitempty" yaml:"adaptive,omitempty"`
	// Group is the group of File.Budget whose share the bulkhead draws on
	// (bulkhead.PartnerOptions.Group); "" is none. It needs File.Budget.
	Group *string `json:"group,omitempty" yaml:"group,omitempty"`
	// Class is the class of File.Budget of the bulkhead's calls that name
	// none (bulkhead.PartnerOptions.Class); "" is the budget's
	// defaultClass. It needs File.Budget.
	Class *string `json:"class,omitempty" yaml:"class,omitempty"`
}

// Entry is a resolved config or instance: what its bulkhead is built from,
// inheritance applied and every rule checked. A setting that configures
// something besides the semaphore (a limit algorithm, a store) adds its
// resolved value here, next to Config.
type Entry struct {
	// Config is the configuration of the instance's Semaphore.
	Config bulkhead.Config
	// Store is where the permits live: the zero Store is local.
	Store Store
	// Adaptive is the resolved adaptive section; nil: a static limit.
	Adaptive *AdaptiveEntry
	// Partner is the group and class the bulkhead joins the file's budget
	// with (File.Budget); zero without one.
	Partner bulkhead.PartnerOptions
}

// Resolved is a File with inheritance applied and every entry checked.
type Resolved struct {
	// Configs holds every named config; it always has
	// bulkhead.DefaultConfigName (bulkhead.DefaultConfig() when the file
	// defines no "default").
	Configs map[string]Entry
	// Instances holds every instance.
	Instances map[string]Entry
	// Budgets holds the configuration of every budget.
	Budgets map[string]bulkhead.BudgetConfig
	// Budget is File.Budget: the budget the registry's bulkheads join.
	Budget string
}

// builtin is what an entry inherits when there is nothing to inherit from.
func builtin() Entry { return Entry{Config: bulkhead.DefaultConfig()} }

// Duration is a time.Duration written as text in configuration files:
// "50ms", "1.5s", "2m" or "0s" (a bare "0" is accepted too). Any other bare
// number is rejected: it has no unit.
type Duration time.Duration

// String returns the duration as time.Duration formats it, e.g. "50ms".
func (d Duration) String() string { return time.Duration(d).String() }

// MarshalText returns the duration as String formats it.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText parses a duration such as "50ms" with time.ParseDuration.
// On failure it returns an error quoting the text and leaves d unchanged.
func (d *Duration) UnmarshalText(text []byte) error {
	v, err := time.ParseDuration(string(text))
	if err != nil {
		return fmt.Errorf("bulkhead config: %q: %s", text, durationRule)
	}
	*d = Duration(v)
	return nil
}

const durationRule = `not a duration: want a number with a unit, such as "50ms" or "0s"`
