package fileconfig

import (
	"fmt"
	"maps"
	"runtime"
	"slices"
	"strings"
	"sync"
	"weak"

	"github.com/rxbulkhead/bulkhead"
)

// This file joins a registry built from a file to a budget of the same
// file: the top-level key budget names it, and each config or instance may
// set the group and class its bulkheads join it with (Spec.Group,
// Spec.Class, inherited like any key).
//
//	budget: hub
//	configs:
//	  default: { maxConcurrentCalls: 20, class: interactive }
//	  gold:    { maxConcurrentCalls: 60, group: gold }
//	instances:
//	  walmart: { baseConfig: gold }
//	  archive: { class: batch }
//
// The group and class of a bulkhead are fixed when the registry is built
// (a partner keeps the group it joined the budget with), so Apply refuses
// a file that would change them; see Apply.

// checkPartners reports the problems of the budget, group and class keys
// of f, whose entries are resolved in res: a budget key naming no budget,
// a group or class set without a budget or naming none of its groups or
// classes. Each is reported at the entry that sets the key. Nothing is
// checked against a budget that has problems of its own (it did not decode
// or breaks a rule), nor after a budget key that did not decode: those
// problems are reported, and names checked against them would add noise.
func checkPartners(f File, res Resolved, r *report) {
	if f.Budget == "" {
		if r.has("", "", "budget") {
			return
		}
		forEachPartnerKey(f, func(kind, name, key, value string) {
			r.add(kind, name, key, value, "needs a budget: name one of the file's budgets with the top-level key budget")
		})
		return
	}
	c, ok := res.Budgets[f.Budget]
	switch {
	case r.has("budget", f.Budget, ""):
		return // the budget has problems: they say why
	case !ok:
		r.add("", "", "budget", f.Budget, "no such budget (known: "+known(slices.Sorted(maps.Keys(res.Budgets)))+")")
		return
	}
	forEachPartnerKey(f, func(kind, name, key, value string) {
		if text := partnerProblem(f.Budget, c, key, value); text != "" {
			r.add(kind, name, key, value, text)
		}
	})
}

// forEachPartnerKey calls fn for every group and class key of f's
// entries, configs then instances, each by name.
func forEachPartnerKey(f File, fn func(kind, name, key, value string)) {
	for _, sec := range []struct {
		kind    string
		entries map[string]Spec
	}{{"config", f.Configs}, {"instance", f.Instances}} {
		for _, name := range slices.Sorted(maps.Keys(sec.entries)) {
			s := sec.entries[name]
			if s.Group != nil {
				fn(sec.kind, name, "group", *s.Group)
			}
			if s.Class != nil {
				fn(sec.kind, name, "class", *s.Class)
			}
		}
	}
}

// partnerProblem returns what is wrong with value as the group or class
// (key) of a partner of the budget named budget, configured as c; "" if
// nothing is ("" is always valid: no group, the default class).
func partnerProblem(budget string, c bulkhead.BudgetConfig, key, value string) string {
	if value == "" {
		return ""
	}
	var names []string
	if key == "group" {
		for _, g := range c.Groups {
			names = append(names, g.Name)
		}
	} else {
		for _, cl := range c.Classes {
			names = append(names, cl.Name)
		}
	}
	if slices.Contains(names, value) {
		return ""
	}
	return fmt.Sprintf("no such %s of budget %q (known: %s)", key, budget, known(names))
}

func known(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// partnerTable is what a registry built by Budgets.NewRegistry joins its
// bulkheads to its budget with: the group and class of each instance of
// the file, and those of the file's "default" config for every other key
// (the catch-all included). It does not change after the registry is
// built.
type partnerTable struct {
	budget    string
	def       bulkhead.PartnerOptions
	instances map[string]bulkhead.PartnerOptions
}

func newPartnerTable(res Resolved) *partnerTable {
	t := &partnerTable{
		budget:    res.Budget,
		def:       res.Configs[bulkhead.DefaultConfigName].Partner,
		instances: make(map[string]bulkhead.PartnerOptions, len(res.Instances)),
	}
	for name, e := range res.Instances {
		t.instances[name] = e.Partner
	}
	return t
}

// of is the partner func of bulkhead.WithBudget.
func (t *partnerTable) of(key string) bulkhead.PartnerOptions {
	if o, ok := t.instances[key]; ok {
		return o
	}
	return t.def
}

// tables maps every live registry built by Budgets.NewRegistry to its
// partnerTable, for Apply. The key is a weak pointer and a cleanup deletes
// the entry, so the map does not keep a registry alive (the table does not
// point to its registry).
var tables sync.Map // weak.Pointer[bulkhead.Registry] -> *partnerTable

func registerTable(r *bulkhead.Registry, t *partnerTable) {
	wp := weak.Make(r)
	tables.Store(wp, t)
	runtime.AddCleanup(r, func(wp weak.Pointer[bulkhead.Registry]) { tables.Delete(wp) }, wp)
}

func tableOf(r *bulkhead.Registry) *partnerTable {
	if t, ok := tables.Load(weak.Make(r)); ok {
		return t.(*partnerTable)
	}
	return nil
}

// NewRegistry is fileconfig.NewRegistry for a file that names one of bs's
// budgets with its top-level budget key: every bulkhead of the registry
// joins that budget (bulkhead.WithBudget, appended to opts) with the group
// and class of its entry: an instance's own (inherited as any key is), and
// for any other key, the catch-all included, those of the file's "default"
// config. A key whose bulkhead is created from another config (by
// bulkhead.WithKeyConfig or CallOptions.ConfigName) joins with the
// "default" config's too: list it as an instance to give it its own.
//
// A file without a budget key gives a registry without a budget, as
// fileconfig.NewRegistry does. NewRegistry fails, creating nothing, with
// the errors of fileconfig.NewRegistry, or with an *Error naming the key
// if bs has no budget of that name or the live budget has no group or
// class the file names (bs may have been built from, or reloaded with,
// another file). When an instance does not fit a registry capped by
// bulkhead.WithMaxBulkheads, the instances created before it leave the
// budget again; the registry's catch-all, which joined the budget first,
// stays an idle partner of it (BudgetMetrics.Partners counts it), with the
// group and class of the file's "default" config.
//
// The registry's budget, and the group and class of its bulkheads, are
// fixed when it is built: Apply keeps them, and refuses a file that would
// change them.
func (bs *Budgets) NewRegistry(f File, opts ...bulkhead.RegistryOption) (*bulkhead.Registry, error) {
	res, err := f.Resolve()
	if err != nil {
		return nil, err
	}
	if err := refuseRedis(res); err != nil {
		return nil, err
	}
	if res.Budget == "" {
		return newRegistry(f, res, opts)
	}
	b, ok := bs.Get(res.Budget)
	if !ok {
		return nil, &Error{Key: "budget", Value: res.Budget, Problem: "no such budget in these Budgets (known: " + known(bs.Names()) + ")"}
	}
	var r report
	live := b.Config()
	for _, sec := range []struct {
		kind    string
		entries map[string]Entry
	}{{"config", res.Configs}, {"instance", res.Instances}} {
		for name, e := range sec.entries {
			for _, kv := range [][2]string{{"group", e.Partner.Group}, {"class", e.Partner.Class}} {
				if text := partnerProblem(res.Budget, live, kv[0], kv[1]); text != "" {
					r.add(sec.kind, name, kv[0], kv[1], strings.Replace(text, " of budget ", " of the live budget ", 1))
				}
			}
		}
	}
	if err := r.err(); err != nil {
		return nil, err
	}
	t := newPartnerTable(res)
	reg, err := newRegistry(f, res, append(slices.Clip(opts), bulkhead.WithBudget(b, t.of)))
	if err != nil {
		return nil, err
	}
	registerTable(reg, t)
	return reg, nil
}

// refuseDroppedGroups returns an *Error for every group that a bulkhead of
// the registry of t joined its budget with and that res, which configures
// that budget, no longer has: Budgets.Apply of the file would drop it from
// under the registry.
func refuseDroppedGroups(t *partnerTable, res Resolved) error {
	if t == nil {
		return nil
	}
	c, ok := res.Budgets[t.budget]
	if !ok {
		return nil
	}
	users := map[string]string{} // group -> a bulkhead that joined with it
	if t.def.Group != "" {
		users[t.def.Group] = "every bulkhead of the default config"
	}
	for _, name := range slices.Sorted(maps.Keys(t.instances)) {
		if g := t.instances[name].Group; g != "" && users[g] == "" {
			users[g] = fmt.Sprintf("the bulkhead %q", name)
		}
	}
	var rep report
	for _, g := range slices.Sorted(maps.Keys(users)) {
		if partnerProblem(t.budget, c, "group", g) != "" {
			rep.add("budget", t.budget, "groups", nil, fmt.Sprintf("drops the group %q that %s of the registry joined the budget with: a live registry keeps its groups (keep it, or restart with the new file)", g, users[g]))
		}
	}
	return rep.err()
}

// refusePartnerChanges returns an *Error for every key of f (resolved in
// res) that would change the budget, or the group or class of a bulkhead,
// of r: they are fixed when r is built. A file without a budget key says
// nothing about them and changes none.
func refusePartnerChanges(r *bulkhead.Registry, f File, res Resolved) error {
	t := tableOf(r)
	if err := refuseDroppedGroups(t, res); err != nil {
		return err
	}
	if res.Budget == "" {
		return nil
	}
	switch {
	case t == nil:
		return &Error{Key: "budget", Value: res.Budget, Problem: "the registry was not built by Budgets.NewRegistry: a registry's budget is fixed when it is built (build it from this file with Budgets.NewRegistry)"}
	case t.budget != res.Budget:
		return &Error{Key: "budget", Value: res.Budget, Problem: fmt.Sprintf("the registry's bulkheads joined the budget %q when it was built: a registry's budget is fixed (restart with the new file)", t.budget)}
	}
	var rep report
	check := func(kind, name string, now, was bulkhead.PartnerOptions) {
		for _, kv := range [][3]string{{"group", now.Group, was.Group}, {"class", now.Class, was.Class}} {
			if kv[1] != kv[2] {
				rep.add(kind, name, kv[0], kv[1], fmt.Sprintf("the registry was built with the %s %q here, and keeps it: restart with the new file to change it", kv[0], kv[2]))
			}
		}
	}
	if _, ok := f.Configs[bulkhead.DefaultConfigName]; ok {
		check("config", bulkhead.DefaultConfigName, res.Configs[bulkhead.DefaultConfigName].Partner, t.def)
	}
	for name, e := range res.Instances {
		check("instance", name, e.Partner, t.of(name))
	}
	return rep.err()
}
