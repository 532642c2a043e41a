package fileconfig

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
)

// This file turns the generic tree a decoder produces into a File. The core
// module has no YAML dependency: File implements json.Unmarshaler and the
// func-based YAML unmarshaler understood by gopkg.in/yaml.v2,
// gopkg.in/yaml.v3, go.yaml.in/yaml/v3 and github.com/goccy/go-yaml, and
// both go through Decode, so every format reports the same errors.

// UnmarshalJSON decodes a JSON document with Decode. A JSON null leaves f
// unchanged. A key given twice in one object (a section, a config or
// instance name, a key of an entry), which encoding/json would let the
// last one win, is an *Error like any other problem of the file, reported
// with them.
func (f *File) UnmarshalJSON(data []byte) error {
	tree, dups, err := jsonTree(data)
	if err != nil {
		return fmt.Errorf("bulkhead config: %w", err)
	}
	if tree == nil {
		return nil
	}
	got, err := decode(tree, dups)
	if err != nil {
		return err
	}
	*f = got
	return nil
}

// UnmarshalYAML decodes a YAML document with Decode. It has the signature
// that gopkg.in/yaml.v2, gopkg.in/yaml.v3, go.yaml.in/yaml/v3 and
// github.com/goccy/go-yaml call, so none of them is a dependency. An empty
// document leaves f unchanged.
func (f *File) UnmarshalYAML(unmarshal func(any) error) error {
	var tree any
	if err := unmarshal(&tree); err != nil {
		return err
	}
	return f.setFrom(tree)
}

func (f *File) setFrom(tree any) error {
	if tree == nil {
		return nil
	}
	got, err := Decode(tree)
	if err != nil {
		return err
	}
	*f = got
	return nil
}

// Decode builds a File from the generic tree that a decoder produces for a
// document: maps with string (or scalar) keys, lists ([]any, or the
// []map[string]any a TOML library gives for an array of tables), strings,
// numbers (Go integers, float64 or json.Number), bools and nil. That is what
// encoding/json (best with UseNumber), the YAML libraries, TOML libraries
// and viper's AllSettings give for an `any`. It is a pure function: it reads
// only tree.
//
// Keys are matched ignoring case, "-" and "_"; a null value leaves the key
// unset; an unknown key, a key given twice, or a value of the wrong kind is
// an *Error. Integers may also be written as decimal strings, and counts as
// "unbounded". Decode then resolves what it could decode (see
// File.Resolve), so that a file fails once with every problem it has, the
// shape's and the rules', joined as described at Error. On failure it
// returns the zero File.
func Decode(tree any) (File, error) { return decode(tree, nil) }

// decode is Decode, reporting as well the keys a JSON document gave twice
// (see jsonTree), which tree no longer shows.
func decode(tree any, dups [][]string) (File, error) {
	var r report
	reportDuplicates(dups, &r)
	f := decodeFile(tree, &r)
	resolveInto(f, &r)
	if err := r.err(); err != nil {
		return File{}, err
	}
	return f, nil
}

// decodeFile decodes what it can of tree and reports the rest.
func decodeFile(tree any, r *report) File {
	var f File
	top, ok := asMap(tree)
	if !ok {
		r.add("", "", "", nil, fmt.Sprintf("want a mapping with the keys configs, instances, budgets and budget, got %s", kindOf(tree)))
		return f
	}
	sections := map[string]string{} // normalised section name -> key as written
	for _, k := range slices.Sorted(maps.Keys(top)) {
		nk := normKey(k)
		if nk != "configs" && nk != "instances" && nk != "budgets" && nk != "budget" {
			r.add("", "", k, nil, "unknown key (known: budget, budgets, configs, instances)")
			continue
		}
		if prev, dup := sections[nk]; dup {
			r.add("", "", k, nil, fmt.Sprintf("given twice (also as %q)", prev))
			continue
		}
		sections[nk] = k
	}
	if k, ok := sections["configs"]; ok {
		f.Configs = decodeSection("config", k, top[k], r)
	}
	if k, ok := sections["instances"]; ok {
		f.Instances = decodeSection("instance", k, top[k], r)
	}
	if k, ok := sections["budgets"]; ok {
		f.Budgets = decodeBudgets(k, top[k], r) // budget.go
	}
	if k, ok := sections["budget"]; ok && top[k] != nil {
		name, ok := top[k].(string)
		if !ok {
			r.add("", "", k, top[k], "want the name of one of the file's budgets, got "+kindOf(top[k]))
		}
		f.Budget = name
	}
	return f
}

func decodeSection(kind, key string, v any, r *report) map[string]Spec {
	if v == nil {
		return nil
	}
	m, ok := asMap(v)
	if !ok {
		r.add("", "", key, nil, fmt.Sprintf("want a mapping from names to settings, got %s", kindOf(v)))
		return nil
	}
	out := make(map[string]Spec, len(m))
	for _, name := range slices.Sorted(maps.Keys(m)) {
		out[name] = decodeSpec(kind, name, m[name], r)
	}
	return out
}

// specKeys are the keys of an entry, decoded by the rows of specFields.
var specKeys = func() mappingKeys[Spec] {
	mk := mappingKeys[Spec]{foreign: foreignKeys}
	for _, f := range specFields {
		mk.keys = append(mk.keys, subkey[Spec]{f.key, f.decode})
	}
	return mk
}()

func decodeSpec(kind, name string, v any, r *report) Spec {
	if v == nil {
		return Spec{}
	}
	spec, probs := decodeMapping(v, specKeys)
	r.addProblems(kind, name, "", probs)
	return spec
}

// subkey is one key of a mapping: how it is written in messages and how
// its value (never nil) is decoded into T.
type subkey[T any] struct {
	key    string
	decode func(v any, into *T) []problem
}

// mappingKeys are the keys a mapping may have.
type mappingKeys[T any] struct {
	keys    []subkey[T]       // in any order; messages list them sorted
	foreign map[string]string // normalised keys refused with a reason; may be nil
}

// decodeMapping decodes a mapping of settings into a T with the rules of an
// entry: keys match ignoring case, "-" and "_"; a null value leaves the key
// unset; an unknown key, a key given twice or a bad value is a problem whose
// key is the key as written, followed by ".subkey" for problems inside its
// value. An entry is decoded with it, and so can a setting whose value is a
// mapping of its own (adaptive: {algorithm: gradient2, min: 5}).
func decodeMapping[T any](v any, mk mappingKeys[T]) (T, []problem) {
	var out T
	m, ok := asMap(v)
	if !ok {
		return out, problemf(v, "want a mapping of settings, got %s", kindOf(v))
	}
	byKey := make(map[string]subkey[T], len(mk.keys))
	known := make([]string, 0, len(mk.keys))
	for _, sk := range mk.keys {
		byKey[normKey(sk.key)] = sk
		known = append(known, sk.key)
	}
	slices.Sort(known)
	var probs []problem
	bad := func(key string, value any, text string) {
		probs = append(probs, problem{key: key, value: value, text: text})
	}
	seen := map[string]string{}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		nk := normKey(k)
		sk, ok := byKey[nk]
		switch {
		case !ok && mk.foreign[nk] != "":
			bad(k, nil, mk.foreign[nk])
			continue
		case !ok:
			bad(k, nil, "unknown key (known: "+strings.Join(known, ", ")+")")
			continue
		}
		if prev, dup := seen[nk]; dup {
			bad(k, nil, fmt.Sprintf("given twice (also as %q)", prev))
			continue
		}
		seen[nk] = k
		if m[k] == nil {
			continue
		}
		for _, p := range sk.decode(m[k], &out) {
			p.key = joinKey(k, p.key)
			probs = append(probs, p)
		}
	}
	return out, probs
}

// joinKey returns the path of subkey under key: "adaptive.min".
func joinKey(key, subkey string) string {
	switch {
	case key == "":
		return subkey
	case subkey == "":
		return key
	case subkey[0] == '[': // an item of a list: "classes[1].share"
		return key + subkey
	}
	return key + "." + subkey
}

func normKey(k string) string {
	return strings.NewReplacer("-", "", "_", "").Replace(strings.ToLower(k))
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
		// "2.0" and "1e2" are integers too, as a YAML decoder, which
		// gives float64 for them, has them.
		if i, ok := parseInt(string(n)); ok {
			return i, true
		}
		f, err := n.Float64()
		if err != nil {
			return 0, false
		}
		return asInt(f)
	case string:
		return parseInt(n)
	}
	return 0, false
}

func parseInt(s string) (int, bool) {
	n, err := strconv.ParseInt(s, 10, 0)
	return int(n), err == nil
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
	case []any, []map[string]any, []map[any]any:
		return "a list"
	}
	if _, ok := asMap(v); ok {
		return "a mapping"
	}
	return fmt.Sprintf("a %T", v)
}
