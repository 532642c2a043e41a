package fileconfig

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rxbulkhead/bulkhead"
)

// Error reports one thing wrong in a File: it names the entry (a config,
// an instance or a budget), the key and the value at fault. Every *Error
// matches bulkhead.ErrInvalidConfig with errors.Is. A file with several
// problems fails with all of them joined by errors.Join, in the order of
// the file (top-level keys, then configs, then instances, then budgets,
// each by name, then by key); errors.As finds the first.
type Error struct {
	Kind    string // "config", "instance" or "budget"; empty for the top level of the file
	Name    string // the config's, instance's or budget's name
	Key     string // the key as written, e.g. "maxWaitDuration" or "adaptive.min"; empty if the whole entry is at fault
	Value   any    // the value at fault as decoded; nil if there is none
	Problem string // what is wrong, e.g. "must be >= 1"
}

// Error returns a message in the quoting style of the bulkhead package:
//
//	bulkhead "walmart": maxWaitDuration "5 parsecs": not a duration: ...   (an instance)
//	bulkhead config "big": maxConcurrentCalls 0: must be >= 1              (a config)
//	bulkhead budget "hub": classes[1].share -1: must be >= 0                (a budget)
//	bulkhead config: bulkheads: unknown key (known: budget, budgets, configs, instances)    (the top level)
func (e *Error) Error() string {
	var b strings.Builder
	switch e.Kind {
	case "instance":
		fmt.Fprintf(&b, "bulkhead %q: ", e.Name)
	case "":
		b.WriteString("bulkhead config: ")
	default:
		fmt.Fprintf(&b, "bulkhead %s %q: ", e.Kind, e.Name)
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

// Is reports whether target is bulkhead.ErrInvalidConfig.
func (e *Error) Is(target error) bool { return target == bulkhead.ErrInvalidConfig }

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
	case int:
		if v == bulkhead.Unbounded {
			return unbounded
		}
	}
	return fmt.Sprintf("%v", v)
}

// problem is what a decoder or a check finds wrong with one value. key is
// empty for the value of the key being decoded, or the path of a subkey
// ("min") when the value is a mapping of its own.
type problem struct {
	key   string
	value any
	text  string
}

func problemf(value any, format string, args ...any) []problem {
	return []problem{{value: value, text: fmt.Sprintf(format, args...)}}
}

// report collects the errors of one file.
type report struct{ errs []*Error }

func (r *report) add(kind, name, key string, value any, text string) {
	r.errs = append(r.errs, &Error{Kind: kind, Name: name, Key: key, Value: value, Problem: text})
}

// addProblems reports the problems found in the value of key.
func (r *report) addProblems(kind, name, key string, probs []problem) {
	for _, p := range probs {
		r.add(kind, name, joinKey(key, p.key), p.value, p.text)
	}
}

// has reports whether a problem of the entry (kind, name) was reported at
// key (matched as files may write it), or anywhere in it if key is "".
func (r *report) has(kind, name, key string) bool {
	return slices.ContainsFunc(r.errs, func(e *Error) bool {
		return e.Kind == kind && e.Name == name && (key == "" || normKey(e.Key) == normKey(key))
	})
}

// err returns nil, the one error, or every error joined in file order.
func (r *report) err() error {
	rank := map[string]int{"": 0, "config": 1, "instance": 2, "budget": 3}
	slices.SortStableFunc(r.errs, func(a, b *Error) int {
		return cmp.Or(cmp.Compare(rank[a.Kind], rank[b.Kind]), strings.Compare(a.Name, b.Name), strings.Compare(a.Key, b.Key))
	})
	switch len(r.errs) {
	case 0:
		return nil
	case 1:
		return r.errs[0]
	}
	errs := make([]error, len(r.errs))
	for i, e := range r.errs {
		errs[i] = e
	}
	return errors.Join(errs...)
}
