package bulkhead

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// This file loads a Registry from a configuration file in the shape of
// resilience4j's Spring properties: named base configs and per-instance
// overrides. The core module has no YAML dependency: the types below carry
// json and yaml struct tags, Duration and QueueOrder implement
// encoding.TextMarshaler/TextUnmarshaler, and RegistryConfig implements
// json.Unmarshaler and the func-based YAML unmarshaler understood by
// gopkg.in/yaml.v2, gopkg.in/yaml.v3, go.yaml.in/yaml/v3 and
// github.com/goccy/go-yaml. Decoding goes through DecodeRegistryConfig, a
// pure function, so every format reports the same errors.

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
	v, err := parseDuration(string(text))
	if err != nil {
		return fmt.Errorf("bulkhead: %q: %s", text, err)
	}
	*d = Duration(v)
	return nil
}

const durationRule = `not a duration: want a number with a unit, such as "50ms" or "0s"`

func parseDuration(s string) (time.Duration, error) {
	v, err := time.ParseDuration(s)
	if err != nil {
		return 0, errors.New(durationRule)
	}
	return v, nil
}

// MarshalText returns "FIFO" or "LIFO". It fails for any other value.
func (o QueueOrder) MarshalText() ([]byte, error) {
	if o != FIFO && o != LIFO {
		return nil, fmt.Errorf("bulkhead: cannot marshal %v: want FIFO or LIFO", o)
	}
	return []byte(o.String()), nil
}

// UnmarshalText accepts "FIFO" or "LIFO" in any letter case. On failure it
// returns an error quoting the text and leaves o unchanged.
func (o *QueueOrder) UnmarshalText(text []byte) error {
	v, err := parseQueueOrder(string(text))
	if err != nil {
		return fmt.Errorf("bulkhead: %q: %s", text, err)
	}
	*o = v
	return nil
}

func parseQueueOrder(s string) (QueueOrder, error) {
	switch {
	case strings.EqualFold(s, "FIFO"):
		return FIFO, nil
	case strings.EqualFold(s, "LIFO"):
		return LIFO, nil
	}
	return 0, errors.New("not a queue order: want FIFO or LIFO")
}

// ConfigSpec is one entry of a RegistryConfig: a named config or an
// instance. Only the fields that are set (non-nil) override what the entry
// inherits, so an explicit zero ("maxQueuedCalls: 0") overrides too.
//
// An entry inherits from BaseConfig if it names one, otherwise from the
// config named "default" if the file has one (and the entry is not that
// config itself), otherwise from DefaultConfig(). This is resilience4j's
// rule.
type ConfigSpec struct {
	// BaseConfig names the config (under RegistryConfig.Configs) to inherit
	// from. Empty: inherit from "default" as described above.
	BaseConfig string `json:"baseConfig,omitempty" yaml:"baseConfig,omitempty"`
	// MaxConcurrentCalls overrides Config.MaxConcurrentCalls.
	MaxConcurrentCalls *int `json:"maxConcurrentCalls,omitempty" yaml:"maxConcurrentCalls,omitempty"`
	// MaxWaitDuration overrides Config.MaxWaitDuration.
	MaxWaitDuration *Duration `json:"maxWaitDuration,omitempty" yaml:"maxWaitDuration,omitempty"`
	// MaxQueuedCalls overrides Config.MaxQueuedCalls.
	MaxQueuedCalls *int `json:"maxQueuedCalls,omitempty" yaml:"maxQueuedCalls,omitempty"`
	// QueueOrder overrides Config.QueueOrder.
	QueueOrder *QueueOrder `json:"queueOrder,omitempty" yaml:"queueOrder,omitempty"`
}

// over returns base with the fields set in s replaced.
func (s ConfigSpec) over(base Config) Config {
	if s.MaxConcurrentCalls != nil {
		base.MaxConcurrentCalls = *s.MaxConcurrentCalls
	}
	if s.MaxWaitDuration != nil {
		base.MaxWaitDuration = time.Duration(*s.MaxWaitDuration)
	}
	if s.MaxQueuedCalls != nil {
		base.MaxQueuedCalls = *s.MaxQueuedCalls
	}
	if s.QueueOrder != nil {
		base.QueueOrder = *s.QueueOrder
	}
	return base
}

// RegistryConfig is the configuration of a Registry as it is written in a
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
// NewRegistryFromConfig and Registry.Apply. Decoding it from JSON or YAML
// goes through DecodeRegistryConfig: keys are matched ignoring case, "-" and
// "_" (so "max-concurrent-calls" works too) and unknown keys are errors.
// Call Resolve to check it.
type RegistryConfig struct {
	// Configs are the named base configurations.
	Configs map[string]ConfigSpec `json:"configs,omitempty" yaml:"configs,omitempty"`
	// Instances are the bulkheads, by name.
	Instances map[string]ConfigSpec `json:"instances,omitempty" yaml:"instances,omitempty"`
}

// UnmarshalJSON decodes a JSON document with DecodeRegistryConfig. A JSON
// null leaves rc unchanged.
func (rc *RegistryConfig) UnmarshalJSON(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var tree any
	if err := dec.Decode(&tree); err != nil {
		return fmt.Errorf("bulkhead: registry config: %w", err)
	}
	return rc.setFrom(tree)
}

// UnmarshalYAML decodes a YAML document with DecodeRegistryConfig. It has
// the signature that gopkg.in/yaml.v2, gopkg.in/yaml.v3, go.yaml.in/yaml/v3
// and github.com/goccy/go-yaml call, so none of them is a dependency. An
// empty document leaves rc unchanged.
func (rc *RegistryConfig) UnmarshalYAML(unmarshal func(any) error) error {
	var tree any
	if err := unmarshal(&tree); err != nil {
		return err
	}
	return rc.setFrom(tree)
}

func (rc *RegistryConfig) setFrom(tree any) error {
	if tree == nil {
		return nil
	}
	got, err := DecodeRegistryConfig(tree)
	if err != nil {
		return err
	}
	*rc = got
	return nil
}

// SpecError reports what is wrong in a RegistryConfig: it names the entry
// (a config or an instance), the key and the value at fault. Every
// *SpecError matches ErrInvalidConfig with errors.Is.
type SpecError struct {
	Kind    string // "config" or "instance"; empty for the top level of the file
	Name    string // the config's or instance's name
	Key     string // the key as written, e.g. "maxWaitDuration"; empty if the whole entry is at fault
	Value   any    // the value at fault as decoded; nil if there is none
	Problem string // what is wrong, e.g. "must be >= 1"
}

// Error returns a message such as
// `bulkhead: instance "walmart": maxWaitDuration "5 parsecs": not a duration: ...`.
func (e *SpecError) Error() string {
	var b strings.Builder
	b.WriteString("bulkhead: ")
	if e.Kind != "" {
		fmt.Fprintf(&b, "%s %q: ", e.Kind, e.Name)
	} else {
		b.WriteString("registry config: ")
	}
	if e.Key != "" {
		b.WriteString(e.Key)
		if e.Value != nil {
			b.WriteByte(' ')
			b.WriteString(quoteValue(e.Value))
		}
		b.WriteString(": ")
	}
	b.WriteString(e.Problem)
	return b.String()
}

// Is reports whether target is ErrInvalidConfig.
func (e *SpecError) Is(target error) bool { return target == ErrInvalidConfig }

func quoteValue(v any) string {
	switch v := v.(type) {
	case string:
		return strconv.Quote(v)
	case json.Number:
		return v.String()
	case Duration:
		return v.String()
	case time.Duration:
		return v.String()
	}
	return fmt.Sprintf("%v", v)
}

// File keys, normalised (lower case, no "-" or "_"), and their spelling in
// messages.
var specKeys = map[string]string{
	"baseconfig":         "baseConfig",
	"maxconcurrentcalls": "maxConcurrentCalls",
	"maxwaitduration":    "maxWaitDuration",
	"maxqueuedcalls":     "maxQueuedCalls",
	"queueorder":         "queueOrder",
}

// resilience4j keys without an equivalent, with the reason.
var foreignKeys = map[string]string{
	"writablestacktraceenabled":       "resilience4j setting with no equivalent here: errors carry no stack trace; remove it",
	"eventconsumerbuffersize":         "resilience4j setting with no equivalent here: events go to listeners registered with OnEvent, there is no buffer; remove it",
	"faircallhandlingstrategyenabled": "resilience4j setting with no equivalent here: waiters are always served in QueueOrder (FIFO by default); remove it",
}

func normKey(k string) string {
	k = strings.ToLower(k)
	return strings.NewReplacer("-", "", "_", "").Replace(k)
}

func knownKeys() string {
	return strings.Join(slices.Sorted(maps.Values(specKeys)), ", ")
}

// DecodeRegistryConfig builds a RegistryConfig from the generic tree that a
// decoder produces for a document: maps with string (or scalar) keys,
// strings, numbers (Go integers, float64 or json.Number), bools and nil.
// That is what encoding/json (best with UseNumber), the YAML libraries,
// TOML libraries and viper's AllSettings give for an `any`. It is a pure
// function: it reads only tree.
//
// Keys are matched ignoring case, "-" and "_"; a null value leaves the key
// unset; an unknown key, a key given twice, or a value of the wrong kind is
// a *SpecError. Integers may also be written as decimal strings. Values are
// not checked against the rules of Config here: Resolve does that. All
// problems are reported, joined with errors.Join, configs first, in name
// order.
func DecodeRegistryConfig(tree any) (RegistryConfig, error) {
	var rc RegistryConfig
	top, ok := asMap(tree)
	if !ok {
		return rc, &SpecError{Problem: fmt.Sprintf("want a mapping with the keys configs and instances, got %s", kindOf(tree))}
	}
	var errs []error
	sections := map[string]string{} // normalised section name -> key as written
	for _, k := range slices.Sorted(maps.Keys(top)) {
		nk := normKey(k)
		if nk != "configs" && nk != "instances" {
			errs = append(errs, &SpecError{Key: k, Problem: "unknown key (known: configs, instances)"})
			continue
		}
		if prev, dup := sections[nk]; dup {
			errs = append(errs, &SpecError{Key: k, Problem: fmt.Sprintf("given twice (also as %q)", prev)})
			continue
		}
		sections[nk] = k
	}
	if k, ok := sections["configs"]; ok {
		var serrs []error
		rc.Configs, serrs = decodeSection("config", k, top[k])
		errs = append(errs, serrs...)
	}
	if k, ok := sections["instances"]; ok {
		var serrs []error
		rc.Instances, serrs = decodeSection("instance", k, top[k])
		errs = append(errs, serrs...)
	}
	if len(errs) > 0 {
		return RegistryConfig{}, joinErrors(errs)
	}
	return rc, nil
}

func decodeSection(kind, key string, v any) (map[string]ConfigSpec, []error) {
	if v == nil {
		return nil, nil
	}
	m, ok := asMap(v)
	if !ok {
		return nil, []error{&SpecError{Key: key, Problem: fmt.Sprintf("want a mapping from names to settings, got %s", kindOf(v))}}
	}
	var errs []error
	out := make(map[string]ConfigSpec, len(m))
	for _, name := range slices.Sorted(maps.Keys(m)) {
		spec, serrs := decodeSpec(kind, name, m[name])
		errs = append(errs, serrs...)
		out[name] = spec
	}
	return out, errs
}

func decodeSpec(kind, name string, v any) (ConfigSpec, []error) {
	var spec ConfigSpec
	if v == nil {
		return spec, nil
	}
	m, ok := asMap(v)
	if !ok {
		return spec, []error{&SpecError{Kind: kind, Name: name, Problem: fmt.Sprintf("want a mapping of settings, got %s", kindOf(v))}}
	}
	var errs []error
	bad := func(key string, value any, problem string) {
		errs = append(errs, &SpecError{Kind: kind, Name: name, Key: key, Value: value, Problem: problem})
	}
	seen := map[string]string{}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		nk := normKey(k)
		field, known := specKeys[nk]
		if !known {
			if why := foreignKeys[nk]; why != "" {
				bad(k, nil, why)
			} else {
				bad(k, nil, "unknown key (known: "+knownKeys()+")")
			}
			continue
		}
		if prev, dup := seen[nk]; dup {
			bad(k, nil, fmt.Sprintf("given twice (also as %q)", prev))
			continue
		}
		seen[nk] = k
		val := m[k]
		if val == nil {
			continue
		}
		switch field {
		case "baseConfig":
			s, ok := val.(string)
			if !ok {
				bad(k, val, "want the name of a config, got "+kindOf(val))
				continue
			}
			spec.BaseConfig = s
		case "maxConcurrentCalls", "maxQueuedCalls":
			n, ok := asInt(val)
			if !ok {
				bad(k, val, "want an integer, got "+kindOf(val))
				continue
			}
			if field == "maxConcurrentCalls" {
				spec.MaxConcurrentCalls = &n
			} else {
				spec.MaxQueuedCalls = &n
			}
		case "maxWaitDuration":
			d, ok := asDuration(val)
			if !ok {
				bad(k, val, durationRule)
				continue
			}
			spec.MaxWaitDuration = &d
		case "queueOrder":
			s, ok := val.(string)
			if !ok {
				bad(k, val, "not a queue order: want FIFO or LIFO")
				continue
			}
			o, err := parseQueueOrder(s)
			if err != nil {
				bad(k, val, err.Error())
				continue
			}
			spec.QueueOrder = &o
		}
	}
	return spec, errs
}

// asMap accepts the map types decoders produce; scalar keys other than
// strings (a partner named 123 in YAML) are formatted with %v.
func asMap(v any) (map[string]any, bool) {
	switch m := v.(type) {
	case map[string]any:
		return m, true
	case map[any]any:
		out := make(map[string]any, len(m))
		for k, x := range m {
			out[fmt.Sprint(k)] = x
		}
		return out, true
	}
	return nil, false
}

func asInt(v any) (int, bool) {
	switch n := v.(type) {
	case int:
		return n, true
	case int8:
		return int(n), true
	case int16:
		return int(n), true
	case int32:
		return int(n), true
	case int64:
		return int(n), n >= math.MinInt && n <= math.MaxInt
	case uint:
		return int(n), n <= math.MaxInt
	case uint8:
		return int(n), true
	case uint16:
		return int(n), true
	case uint32:
		return int(n), uint64(n) <= math.MaxInt
	case uint64:
		return int(n), n <= math.MaxInt
	case float64:
		return int(n), n == math.Trunc(n) && n >= math.MinInt && n < math.MaxInt
	case float32:
		return asInt(float64(n))
	case json.Number:
		return parseInt(string(n))
	case string:
		return parseInt(n)
	}
	return 0, false
}

func parseInt(s string) (int, bool) {
	n, err := strconv.ParseInt(s, 10, 0)
	return int(n), err == nil
}

// asDuration accepts text ("50ms") and the number zero; any other number has
// no unit and is rejected.
func asDuration(v any) (Duration, bool) {
	if s, ok := v.(string); ok {
		d, err := parseDuration(s)
		return Duration(d), err == nil
	}
	n, ok := asInt(v)
	return 0, ok && n == 0
}

func kindOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case json.Number, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, float32, float64:
		return "a number"
	case []any:
		return "a list"
	}
	if _, ok := asMap(v); ok {
		return "a mapping"
	}
	return fmt.Sprintf("a %T", v)
}

func joinErrors(errs []error) error {
	if len(errs) == 1 {
		return errs[0]
	}
	return errors.Join(errs...)
}

// ResolvedConfig is a RegistryConfig with inheritance applied and every
// configuration validated.
type ResolvedConfig struct {
	// Configs holds every named config; it always has DefaultConfigName
	// (DefaultConfig() when the file defines no "default").
	Configs map[string]Config
	// Instances holds the configuration of every instance.
	Instances map[string]Config
}

// Resolve applies inheritance (BaseConfig, then "default", then
// DefaultConfig()) and validates every config and instance. It is a pure
// function of rc.
//
// It reports, as *SpecError values joined with errors.Join (configs first,
// in name order): empty names, a BaseConfig naming no config, inheritance
// cycles (including through the implicit "default"), and values that
// break a rule of Config (naming the entry that sets the value). An entry
// whose base failed is not reported again.
func (rc RegistryConfig) Resolve() (ResolvedConfig, error) {
	r := resolver{
		rc:    rc,
		state: make(map[string]resolveState, len(rc.Configs)),
		out: ResolvedConfig{
			Configs:   make(map[string]Config, len(rc.Configs)+1),
			Instances: make(map[string]Config, len(rc.Instances)),
		},
	}
	for _, name := range slices.Sorted(maps.Keys(rc.Configs)) {
		r.config(name)
	}
	if _, ok := rc.Configs[DefaultConfigName]; !ok {
		r.out.Configs[DefaultConfigName] = DefaultConfig()
	}
	for _, name := range slices.Sorted(maps.Keys(rc.Instances)) {
		if cfg, ok := r.resolve("instance", name, rc.Instances[name]); ok {
			r.out.Instances[name] = cfg
		}
	}
	if len(r.errs) > 0 {
		return ResolvedConfig{}, joinErrors(r.errs)
	}
	return r.out, nil
}

type resolveState uint8

const (
	unresolved resolveState = iota
	visiting
	resolved
	failed
)

type resolver struct {
	rc    RegistryConfig
	state map[string]resolveState
	stack []string // configs being resolved, for cycle messages
	out   ResolvedConfig
	errs  []error
}

// config resolves the named config once, depth first.
func (r *resolver) config(name string) (Config, bool) {
	switch r.state[name] {
	case resolved:
		return r.out.Configs[name], true
	case failed:
		return Config{}, false
	}
	r.state[name] = visiting
	r.stack = append(r.stack, name)
	cfg, ok := r.resolve("config", name, r.rc.Configs[name])
	r.stack = r.stack[:len(r.stack)-1]
	if !ok {
		r.state[name] = failed
		return Config{}, false
	}
	r.state[name] = resolved
	r.out.Configs[name] = cfg
	return cfg, true
}

func (r *resolver) resolve(kind, name string, spec ConfigSpec) (Config, bool) {
	fail := func(key string, value any, problem string) (Config, bool) {
		r.errs = append(r.errs, &SpecError{Kind: kind, Name: name, Key: key, Value: value, Problem: problem})
		return Config{}, false
	}
	if name == "" {
		return fail("", nil, "the name must not be empty")
	}
	base := DefaultConfig()
	baseName, explicit := spec.BaseConfig, spec.BaseConfig != ""
	if !explicit {
		if _, ok := r.rc.Configs[DefaultConfigName]; ok && (kind == "instance" || name != DefaultConfigName) {
			baseName = DefaultConfigName
		}
	}
	if baseName != "" {
		if _, ok := r.rc.Configs[baseName]; !ok {
			known := strings.Join(slices.Sorted(maps.Keys(r.rc.Configs)), ", ")
			if known == "" {
				known = "none"
			}
			return fail("baseConfig", baseName, "no such config (known: "+known+")")
		}
		if r.state[baseName] == visiting {
			i := slices.Index(r.stack, baseName)
			cycle := strings.Join(append(slices.Clone(r.stack[i:]), baseName), " -> ")
			problem := "inheritance cycle " + cycle
			if slices.ContainsFunc(r.stack[i:], func(n string) bool { return r.rc.Configs[n].BaseConfig == "" }) {
				problem += ` (an entry without baseConfig inherits "default")`
			}
			key := "baseConfig"
			var value any = baseName
			if !explicit {
				key, value = "", nil
			}
			return fail(key, value, problem)
		}
		var ok bool
		if base, ok = r.config(baseName); !ok {
			return Config{}, false // reported where it failed
		}
	}
	cfg := spec.over(base)
	if err := cfg.Validate(); err != nil {
		var ce *ConfigError
		if !errors.As(err, &ce) {
			return fail("", nil, err.Error())
		}
		key := ce.Field
		if k, ok := specKeys[strings.ToLower(ce.Field)]; ok {
			key = k
		}
		return fail(key, ce.Value, ce.Rule)
	}
	return cfg, true
}

// NewRegistryFromConfig resolves rc and returns a Registry whose default
// configuration is rc's "default" (DefaultConfig() if rc has none), with
// every config of rc added and every instance of rc created. opts are
// applied first, so a config of rc replaces a WithConfig of the same name.
// It fails, creating nothing, with the error of Resolve.
func NewRegistryFromConfig(rc RegistryConfig, opts ...RegistryOption) (*Registry, error) {
	res, err := rc.Resolve()
	if err != nil {
		return nil, err
	}
	r, err := NewRegistry(res.Configs[DefaultConfigName], opts...)
	if err != nil {
		return nil, err
	}
	if err := r.applyResolved(res); err != nil {
		return nil, err
	}
	return r, nil
}

// Apply reloads a configuration into a live registry. It resolves rc first
// and, if that fails, returns the error and changes nothing. Otherwise it
// adds or replaces every config of rc (the one named "default" becomes the
// configuration of bulkheads created later by Bulkhead) and applies every
// instance of rc with Registry.Configure: an existing bulkhead changes with
// Semaphore.ChangeConfig, a missing one is created with its configuration,
// so no caller ever sees it with another one.
//
// Bulkheads that rc does not list as instances keep their configuration,
// and none is removed. Each bulkhead changes atomically, with
// ChangeConfig's guarantees (growth grants waiters at once, shrinking
// blocks nobody), but not all of them at the same instant.
//
// Waiters granted because a bulkhead grew have their OnDone callbacks run
// on the goroutine calling Apply, as with ChangeConfig. Concurrent Apply
// calls are not serialised: the last one to change a bulkhead wins, so
// reload from one goroutine.
func (r *Registry) Apply(rc RegistryConfig) error {
	res, err := rc.Resolve()
	if err != nil {
		return err
	}
	return r.applyResolved(res)
}

// applyResolved adds the configs of res, then configures its instances in
// name order. res has been validated by Resolve, so the errors below are
// only a safety net; a config is validated again by AddConfig and an
// instance by Configure, each before anything of it changes.
func (r *Registry) applyResolved(res ResolvedConfig) error {
	for _, name := range slices.Sorted(maps.Keys(res.Configs)) {
		if err := r.AddConfig(name, res.Configs[name]); err != nil {
			return err
		}
	}
	for _, name := range slices.Sorted(maps.Keys(res.Instances)) {
		if _, err := r.Configure(name, res.Instances[name]); err != nil {
			return err
		}
	}
	return nil
}
