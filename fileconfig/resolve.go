package fileconfig

import (
	"maps"
	"slices"
	"strings"

	"github.com/rxbulkhead/bulkhead"
)

// Resolve applies inheritance (BaseConfig, then "default", then
// bulkhead.DefaultConfig()) and checks every config and instance. It is a
// pure function of f, and it is what Decode runs after decoding: a File
// that Decode (or UnmarshalJSON, UnmarshalYAML) returned resolves without
// error. Call it on a File built in Go.
//
// It reports, as *Error values joined as described at Error: empty names,
// a BaseConfig naming no config, inheritance cycles (including through the
// implicit "default"), and values that break a rule of bulkhead.Config.
// A value that breaks a rule is reported at every entry that sets it, and
// only there: an entry that inherits a broken value is not reported again.
// A rule between fields (a positive maxWaitDuration needs a maxQueuedCalls
// of at least 1) is reported at the entry that breaks it, naming the key
// bulkhead.Config.Validate names, even when that key's value is inherited.
func (f File) Resolve() (Resolved, error) {
	var r report
	res := resolveInto(f, &r)
	if err := r.err(); err != nil {
		return Resolved{}, err
	}
	return res, nil
}

// resolveInto resolves every entry of f, reporting problems to r. Entries
// that have problems are resolved as well as they can be (a missing base
// is replaced by the built-in defaults), so that every entry is checked.
func resolveInto(f File, r *report) Resolved {
	rs := resolver{
		file:  f,
		rep:   r,
		state: make(map[string]resolveState, len(f.Configs)),
		out: Resolved{
			Configs:   make(map[string]Entry, len(f.Configs)+1),
			Instances: make(map[string]Entry, len(f.Instances)),
		},
	}
	for _, name := range slices.Sorted(maps.Keys(f.Configs)) {
		rs.config(name)
	}
	if _, ok := f.Configs[bulkhead.DefaultConfigName]; !ok {
		rs.out.Configs[bulkhead.DefaultConfigName] = builtin()
	}
	for _, name := range slices.Sorted(maps.Keys(f.Instances)) {
		rs.out.Instances[name] = rs.resolve("instance", name, f.Instances[name])
	}
	rs.out.Budgets = resolveBudgets(f, r) // budget.go
	rs.out.Budget = f.Budget
	checkPartners(f, rs.out, r) // partners.go
	return rs.out
}

type resolveState uint8

const (
	unresolved resolveState = iota
	visiting
	resolved
)

type resolver struct {
	file  File
	rep   *report
	state map[string]resolveState
	stack []string // configs being resolved, for cycle messages
	out   Resolved
}

// config resolves the named config once, depth first.
func (r *resolver) config(name string) Entry {
	if r.state[name] == resolved {
		return r.out.Configs[name]
	}
	r.state[name] = visiting
	r.stack = append(r.stack, name)
	e := r.resolve("config", name, r.file.Configs[name])
	r.stack = r.stack[:len(r.stack)-1]
	r.state[name] = resolved
	r.out.Configs[name] = e
	return e
}

// resolve returns spec over what it inherits and reports its problems.
func (r *resolver) resolve(kind, name string, spec Spec) Entry {
	if name == "" {
		r.rep.add(kind, name, "", nil, "the name must not be empty")
	}
	base := r.inherited(kind, name, spec)
	e := base
	for _, f := range specFields {
		if f.over != nil && f.isSet(spec) {
			f.over(spec, &e)
		}
	}
	r.check(kind, name, spec, base, e)
	return e
}

// inherited returns the entry spec inherits from: its base config, else
// "default", else the built-in defaults, which also stand in for a base
// that does not exist or closes a cycle (both reported).
func (r *resolver) inherited(kind, name string, spec Spec) Entry {
	baseName, explicit := spec.BaseConfig, spec.BaseConfig != ""
	if !explicit {
		if _, ok := r.file.Configs[bulkhead.DefaultConfigName]; ok && (kind == "instance" || name != bulkhead.DefaultConfigName) {
			baseName = bulkhead.DefaultConfigName
		}
	}
	if baseName == "" {
		return builtin()
	}
	if _, ok := r.file.Configs[baseName]; !ok {
		known := strings.Join(slices.Sorted(maps.Keys(r.file.Configs)), ", ")
		if known == "" {
			known = "none"
		}
		r.rep.add(kind, name, "baseConfig", baseName, "no such config (known: "+known+")")
		return builtin()
	}
	if r.state[baseName] == visiting {
		i := slices.Index(r.stack, baseName)
		problem := "inheritance cycle " + strings.Join(append(slices.Clone(r.stack[i:]), baseName), " -> ")
		if slices.ContainsFunc(r.stack[i:], func(n string) bool { return r.file.Configs[n].BaseConfig == "" }) {
			problem += ` (an entry without baseConfig inherits "default")`
		}
		if explicit {
			r.rep.add(kind, name, "baseConfig", baseName, problem)
		} else {
			r.rep.add(kind, name, "", nil, problem)
		}
		return builtin()
	}
	return r.config(baseName)
}

// check reports the problems of e, spec over base, that are spec's: those
// of the keys spec sets, and those its base does not have (a rule between
// two fields, such as a wait that needs a queue, broken by the one that
// spec sets). A problem e only inherits is reported where it was made.
func (r *resolver) check(kind, name string, spec Spec, base, e Entry) {
	inherited := map[string]bool{}
	for _, ce := range configErrors(base.Config.Validate()) {
		inherited[ce.Field] = true
	}
	for _, ce := range configErrors(e.Config.Validate()) {
		f := fieldForConfig(ce.Field)
		switch {
		case f == nil: // a rule no key maps to: report it at the entry
			r.rep.add(kind, name, "", nil, ce.Error())
		case f.isSet(spec) || !inherited[ce.Field]:
			r.rep.add(kind, name, f.key, ce.Value, ce.Rule)
		}
	}
	for _, f := range specFields {
		if f.check != nil && f.isSet(spec) {
			r.rep.addProblems(kind, name, f.key, f.check(e))
		}
	}
}

func fieldForConfig(configField string) *specField {
	for i := range specFields {
		if specFields[i].configField == configField {
			return &specFields[i]
		}
	}
	return nil
}

// configErrors returns the *bulkhead.ConfigError values of an error of
// Config.Validate, which joins one per invalid field.
func configErrors(err error) []*bulkhead.ConfigError {
	if err == nil {
		return nil
	}
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	out := make([]*bulkhead.ConfigError, 0, len(errs))
	for _, e := range errs {
		if ce, ok := e.(*bulkhead.ConfigError); ok {
			out = append(out, ce)
		}
	}
	return out
}
