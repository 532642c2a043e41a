package fileconfig

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/rxbulkhead/bulkhead"
)

// This file is the "budgets" section of a File: hub budgets
// (bulkhead.Budget), each a BudgetSpec, decoded, checked with
// bulkhead.BudgetConfig.Validate, built by NewBudgets and reloaded by
// Budgets.Apply.
//
//	budgets:
//	  hub:
//	    size: 1000
//	    maxQueuedCalls: unbounded
//	    maxBypass: 100
//	    classes:                     # highest priority first
//	      - { name: interactive, headroom: 20, maxWaitDuration: 1s, maxQueuedCalls: unbounded }
//	      - { name: batch, share: 50, maxWaitDuration: 1m, maxQueuedCalls: unbounded }
//	    groups:
//	      - { name: gold, nominal: 300, lendable: 200, borrowingLimit: unbounded }
//
// A budget has no inheritance: a key left out is zero (no share, no
// headroom, no wait, no queue, no bypass), as in bulkhead.BudgetConfig.

// BudgetSpec is one budget of a File's "budgets" section: the settings of
// a bulkhead.BudgetConfig as files write them (counts accept "unbounded",
// waits are durations). Classes are listed highest priority first.
type BudgetSpec struct {
	Size           int         `json:"size,omitempty" yaml:"size,omitempty"`
	MaxQueuedCalls int         `json:"maxQueuedCalls,omitempty" yaml:"maxQueuedCalls,omitempty"`
	MaxBypass      int         `json:"maxBypass,omitempty" yaml:"maxBypass,omitempty"`
	DefaultClass   string      `json:"defaultClass,omitempty" yaml:"defaultClass,omitempty"`
	Classes        []ClassSpec `json:"classes,omitempty" yaml:"classes,omitempty"`
	Groups         []GroupSpec `json:"groups,omitempty" yaml:"groups,omitempty"`
}

// ClassSpec is one class of a BudgetSpec (bulkhead.ClassConfig).
type ClassSpec struct {
	Name            string   `json:"name,omitempty" yaml:"name,omitempty"`
	Share           int      `json:"share,omitempty" yaml:"share,omitempty"`
	Headroom        int      `json:"headroom,omitempty" yaml:"headroom,omitempty"`
	MaxWaitDuration Duration `json:"maxWaitDuration,omitempty" yaml:"maxWaitDuration,omitempty"`
	MaxQueuedCalls  int      `json:"maxQueuedCalls,omitempty" yaml:"maxQueuedCalls,omitempty"`
}

// GroupSpec is one group of a BudgetSpec (bulkhead.GroupConfig).
type GroupSpec struct {
	Name           string `json:"name,omitempty" yaml:"name,omitempty"`
	Nominal        int    `json:"nominal,omitempty" yaml:"nominal,omitempty"`
	Lendable       int    `json:"lendable,omitempty" yaml:"lendable,omitempty"`
	BorrowingLimit int    `json:"borrowingLimit,omitempty" yaml:"borrowingLimit,omitempty"`
}

// Config returns the bulkhead.BudgetConfig that s describes (not checked:
// see File.Resolve).
func (s BudgetSpec) Config() bulkhead.BudgetConfig {
	c := bulkhead.BudgetConfig{Size: s.Size, MaxQueuedCalls: s.MaxQueuedCalls, MaxBypass: s.MaxBypass, DefaultClass: s.DefaultClass}
	for _, cl := range s.Classes {
		c.Classes = append(c.Classes, bulkhead.ClassConfig{Name: cl.Name, Share: cl.Share, Headroom: cl.Headroom,
			MaxWaitDuration: time.Duration(cl.MaxWaitDuration), MaxQueuedCalls: cl.MaxQueuedCalls})
	}
	for _, g := range s.Groups {
		c.Groups = append(c.Groups, bulkhead.GroupConfig{Name: g.Name, Nominal: g.Nominal, Lendable: g.Lendable, BorrowingLimit: g.BorrowingLimit})
	}
	return c
}

// budgetKeys are the keys of a budget.
var budgetKeys = mappingKeys[BudgetSpec]{keys: []subkey[BudgetSpec]{
	{"size", countInto(func(s *BudgetSpec) *int { return &s.Size })},
	{"maxQueuedCalls", countInto(func(s *BudgetSpec) *int { return &s.MaxQueuedCalls })},
	{"maxBypass", countInto(func(s *BudgetSpec) *int { return &s.MaxBypass })},
	{"defaultClass", func(v any, s *BudgetSpec) []problem {
		name, ok := v.(string)
		if !ok {
			return problemf(v, "want the name of a class, got %s", kindOf(v))
		}
		s.DefaultClass = name
		return nil
	}},
	{"classes", func(v any, s *BudgetSpec) []problem {
		var probs []problem
		s.Classes, probs = decodeList(v, "classes", classKeys)
		return probs
	}},
	{"groups", func(v any, s *BudgetSpec) []problem {
		var probs []problem
		s.Groups, probs = decodeList(v, "groups", groupKeys)
		return probs
	}},
}}

var classKeys = mappingKeys[ClassSpec]{keys: []subkey[ClassSpec]{
	{"name", nameInto(func(c *ClassSpec) *string { return &c.Name })},
	{"share", countInto(func(c *ClassSpec) *int { return &c.Share })},
	{"headroom", countInto(func(c *ClassSpec) *int { return &c.Headroom })},
	{"maxWaitDuration", func(v any, c *ClassSpec) []problem {
		d, probs := decodeDuration(v)
		c.MaxWaitDuration = d
		return probs
	}},
	{"maxQueuedCalls", countInto(func(c *ClassSpec) *int { return &c.MaxQueuedCalls })},
}}

var groupKeys = mappingKeys[GroupSpec]{keys: []subkey[GroupSpec]{
	{"name", nameInto(func(g *GroupSpec) *string { return &g.Name })},
	{"nominal", countInto(func(g *GroupSpec) *int { return &g.Nominal })},
	{"lendable", countInto(func(g *GroupSpec) *int { return &g.Lendable })},
	{"borrowingLimit", countInto(func(g *GroupSpec) *int { return &g.BorrowingLimit })},
}}

// countInto decodes a count (an integer or "unbounded") into a field.
func countInto[T any](field func(*T) *int) func(v any, into *T) []problem {
	return func(v any, into *T) []problem {
		n, probs := decodeCount(v)
		*field(into) = n
		return probs
	}
}

// nameInto decodes a name (a string) into a field.
func nameInto[T any](field func(*T) *string) func(v any, into *T) []problem {
	return func(v any, into *T) []problem {
		name, ok := v.(string)
		if !ok {
			return problemf(v, "want a name, got %s", kindOf(v))
		}
		*field(into) = name
		return nil
	}
}

// decodeList decodes a list of mappings; the problems of its i-th item are
// keyed "[i]" and "[i].subkey".
func decodeList[T any](v any, what string, mk mappingKeys[T]) ([]T, []problem) {
	list, ok := asList(v)
	if !ok {
		return nil, problemf(nil, "want a list of %s (a mapping each), got %s", what, kindOf(v))
	}
	out := make([]T, 0, len(list))
	var probs []problem
	for i, item := range list {
		at := "[" + strconv.Itoa(i) + "]"
		if item == nil {
			probs = append(probs, problem{key: at, text: "want a mapping of settings, got null"})
			continue
		}
		if _, ok := asMap(item); !ok {
			probs = append(probs, problem{key: at, text: "want a mapping of settings, got " + kindOf(item)})
			continue
		}
		x, ps := decodeMapping(item, mk)
		for _, p := range ps {
			p.key = at + dotted(p.key)
			probs = append(probs, p)
		}
		out = append(out, x)
	}
	return out, probs
}

// asList accepts the list types decoders produce: []any (encoding/json,
// the YAML libraries), and a list of mappings as TOML libraries give an
// array of tables ([]map[string]any from BurntSushi/toml and
// pelletier/go-toml v1, so from viper too).
func asList(v any) ([]any, bool) {
	switch l := v.(type) {
	case []any:
		return l, true
	case []map[string]any:
		out := make([]any, len(l))
		for i, m := range l {
			out[i] = m
		}
		return out, true
	case []map[any]any:
		out := make([]any, len(l))
		for i, m := range l {
			out[i] = m
		}
		return out, true
	}
	return nil, false
}

func dotted(key string) string {
	if key == "" {
		return ""
	}
	return "." + key
}

func decodeBudgets(key string, v any, r *report) map[string]BudgetSpec {
	if v == nil {
		return nil
	}
	m, ok := asMap(v)
	if !ok {
		r.add("", "", key, nil, fmt.Sprintf("want a mapping from budget names to settings, got %s", kindOf(v)))
		return nil
	}
	out := make(map[string]BudgetSpec, len(m))
	for _, name := range slices.Sorted(maps.Keys(m)) {
		if m[name] == nil {
			out[name] = BudgetSpec{}
			continue
		}
		spec, probs := decodeMapping(m[name], budgetKeys)
		r.addProblems("budget", name, "", probs)
		if len(probs) == 0 {
			// A budget that did not decode is not checked against the
			// rules too: what is missing of it (a class that was not a
			// mapping) would be reported as well, for nothing.
			out[name] = spec
		}
	}
	return out
}

// resolveBudgets checks every budget of f, reporting to r, and returns
// their configurations.
func resolveBudgets(f File, r *report) map[string]bulkhead.BudgetConfig {
	out := make(map[string]bulkhead.BudgetConfig, len(f.Budgets))
	for _, name := range slices.Sorted(maps.Keys(f.Budgets)) {
		if name == "" {
			r.add("budget", name, "", nil, "the name must not be empty")
		}
		c := f.Budgets[name].Config()
		for _, ce := range configErrors(c.Validate()) {
			r.add("budget", name, fileKey(ce.Field), ce.Value, ce.Rule)
		}
		out[name] = c
	}
	return out
}

// fileKey turns a field path of bulkhead.BudgetConfig.Validate into the
// key a file writes: "Classes[2].MaxWaitDuration" -> "classes[2].maxWaitDuration".
func fileKey(field string) string {
	parts := strings.Split(field, ".")
	for i, p := range parts {
		r, n := utf8.DecodeRuneInString(p)
		parts[i] = string(unicode.ToLower(r)) + p[n:]
	}
	return strings.Join(parts, ".")
}

// Budgets are the hub budgets of a File, by name: NewBudgets builds them,
// Apply reloads a file into them, and Get and All hand them to the code
// that joins partners (bulkhead.Budget.Partner) and to the exporters
// (contrib/prometheus.NewBudgetCollector, contrib/otel.StartBudgets). A
// Budgets is safe for concurrent use.
type Budgets struct {
	opts []bulkhead.Option
	mu   sync.Mutex // serialises Apply; guards m
	m    map[string]*bulkhead.Budget
}

// NewBudgets resolves f and builds every budget of its "budgets" section,
// with opts (bulkhead.WithClock) given to each bulkhead.NewBudget. It fails,
// building nothing, with the error of Resolve (every problem of the file,
// the budgets' with Kind "budget", e.g. `bulkhead budget "hub":
// classes[1].share 70: ...`). A file without budgets gives an empty
// Budgets, which a later Apply may fill.
func NewBudgets(f File, opts ...bulkhead.Option) (*Budgets, error) {
	res, err := f.Resolve()
	if err != nil {
		return nil, err
	}
	bs := &Budgets{opts: slices.Clone(opts), m: make(map[string]*bulkhead.Budget, len(res.Budgets))}
	for _, name := range slices.Sorted(maps.Keys(res.Budgets)) {
		b, err := bulkhead.NewBudget(name, res.Budgets[name], opts...)
		if err != nil {
			return nil, err
		}
		bs.m[name] = b
	}
	return bs, nil
}

// Get returns the budget named name, or false if there is none.
func (bs *Budgets) Get(name string) (*bulkhead.Budget, bool) {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	b, ok := bs.m[name]
	return b, ok
}

// Names returns the names of the budgets, sorted.
func (bs *Budgets) Names() []string {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	return slices.Sorted(maps.Keys(bs.m))
}

// All returns the budgets in name order (for NewBudgetCollector and
// StartBudgets).
func (bs *Budgets) All() []*bulkhead.Budget {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	out := make([]*bulkhead.Budget, 0, len(bs.m))
	for _, name := range slices.Sorted(maps.Keys(bs.m)) {
		out = append(out, bs.m[name])
	}
	return out
}

// Apply reloads f into the budgets. It resolves f first and, if that
// fails, returns the error and changes nothing. A budget of f that exists
// changes with bulkhead.Budget.ChangeConfig (size, shares, headroom,
// waits, bounds, bypass, groups; classes reordered or added); one that
// does not is created. Budgets that f does not list are kept as they are
// (an exporter or a partner may hold them), as fileconfig.Apply keeps
// bulkheads.
//
// A live budget cannot lose a class (its calls may hold permits of it, and
// partners name it): a file that drops a class of a live budget is refused
// as a whole, before any budget changes, with an *Error naming the budget
// and the class. Remove a class by restarting with the new file. Each
// budget changes atomically, with ChangeConfig's guarantees, but not all
// of them at the same instant; waiters granted because a budget grew have
// their callbacks run on the goroutine calling Apply.
func (bs *Budgets) Apply(f File) error {
	res, err := f.Resolve()
	if err != nil {
		return err
	}
	bs.mu.Lock()
	defer bs.mu.Unlock()
	var r report
	for _, name := range slices.Sorted(maps.Keys(res.Budgets)) {
		b, ok := bs.m[name]
		if !ok {
			continue
		}
		for _, c := range b.Config().Classes {
			if !slices.ContainsFunc(res.Budgets[name].Classes, func(n bulkhead.ClassConfig) bool { return n.Name == c.Name }) {
				r.add("budget", name, "classes", nil, fmt.Sprintf("drops the class %q of the live budget: a live budget cannot lose a class (keep it, or restart with the new file)", c.Name))
			}
		}
	}
	if err := r.err(); err != nil {
		return err
	}
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(res.Budgets)) {
		if b, ok := bs.m[name]; ok {
			errs = append(errs, b.ChangeConfig(res.Budgets[name]))
			continue
		}
		b, err := bulkhead.NewBudget(name, res.Budgets[name], bs.opts...)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		bs.m[name] = b
	}
	return errors.Join(errs...)
}
