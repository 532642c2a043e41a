package fileconfig_test

// Hostile readings of the package's doc promises: each test quotes the
// promise it tries, and tries it at an edge (a registry capped below the
// file, a tree the caller keeps using, NaN and numbers past int's range, a
// YAML library that fails or gives nothing).

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/fileconfig"
)

// Budgets.NewRegistry: "NewRegistry fails, creating nothing". A registry
// capped (bulkhead.WithMaxBulkheads) below the file's instances fails on
// the instance that does not fit; the instances created before it had
// joined the live budget, whose partners outlive the failed registry: the
// budget must not keep them (a later registry that gives such an instance
// another group would be refused because of a registry that never was).
func TestHostileAFailedBudgetsNewRegistryLeavesNoPartnerInTheBudget(t *testing.T) {
	f := decodeFile(t, hubFile) // instances archive (no group) and walmart (gold)
	bs, err := fileconfig.NewBudgets(f)
	if err != nil {
		t.Fatal(err)
	}
	hub, _ := bs.Get("hub")
	_, err = bs.NewRegistry(f, bulkhead.WithMaxBulkheads(1, bulkhead.Config{MaxConcurrentCalls: 1}))
	if !errors.Is(err, bulkhead.ErrRegistryFull) || !strings.Contains(err.Error(), `"walmart"`) {
		t.Fatalf("NewRegistry capped at 1 of 2 instances = %v, want ErrRegistryFull naming walmart", err)
	}
	// The catch-all joined the budget when the registry was built, before
	// any instance; it is the only partner a failed build may leave.
	if n := hub.Metrics().Partners; n != 1 {
		t.Fatalf("the budget keeps %d partners after the failed NewRegistry, want 1 (its catch-all): the instance archive stayed", n)
	}
	other := decodeFile(t, `{"budget": "hub", `+hubBudgets+`, "instances": {"archive": {"group": "silver"}}}`)
	r, err := bs.NewRegistry(other)
	if err != nil {
		t.Fatalf("a registry giving archive another group after the failed one: %v", err)
	}
	if g, _ := usage(t, r, "archive"); g != "silver" {
		t.Fatalf("archive draws on group %q, want silver", g)
	}
}

// Apply: "It resolves f first and, if that fails, returns the error and
// changes nothing." A file that resolves can still fail on the registry:
// one capped by WithMaxBulkheads cannot create an instance past the cap.
// Apply then returns the ErrRegistryFull of the instance that did not fit
// and keeps what it had applied before it: the configs, and the instances
// before it in name order (the doc says so since this audit).
func TestHostileApplyToAFullRegistryReportsTheInstanceThatDidNotFit(t *testing.T) {
	r, err := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 3}, bulkhead.WithMaxBulkheads(1, bulkhead.Config{MaxConcurrentCalls: 1}))
	if err != nil {
		t.Fatal(err)
	}
	err = fileconfig.Apply(r, decodeJSON(t, `{"configs": {"default": {"maxConcurrentCalls": 9}},
		"instances": {"a": {"maxConcurrentCalls": 4}, "b": {}}}`))
	if !errors.Is(err, bulkhead.ErrRegistryFull) || !strings.HasPrefix(err.Error(), `bulkhead "b": `) {
		t.Fatalf("Apply past the cap = %v, want ErrRegistryFull naming b", err)
	}
	if a, ok := r.Find("a"); !ok || a.Config().MaxConcurrentCalls != 4 {
		t.Fatalf("instance a (before b in name order): found %v; want it created with its config", ok)
	}
	if _, ok := r.Find("b"); ok {
		t.Fatal("instance b was created past the cap")
	}
	s, err := r.AcquirePermission(t.Context(), "later", bulkhead.CallOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.ReleasePermission()
	if c, ok := r.Find(bulkhead.CatchAllName); !ok || c.Config().MaxConcurrentCalls != 1 {
		t.Fatalf("catch-all: found %v; want it untouched", ok)
	}
	if n := r.Stats().CatchAllCalls; n != 1 {
		t.Fatalf("CatchAllCalls = %d, want 1: the keyed call went to the catch-all of the full registry", n)
	}
}

// Decode: "It is a pure function: it reads only tree." A caller that keeps
// its tree (viper's settings, a map[any]any from a YAML library) must find
// it as it was, whether the file decodes or not.
func TestHostileDecodeLeavesTheCallersTreeAsItWas(t *testing.T) {
	build := func() map[string]any {
		return map[string]any{
			"configs": map[any]any{"default": map[any]any{"max-concurrent-calls": 3, 7: nil}},
			"instances": map[string]any{
				"a": map[string]any{"maxQueuedCalls": "unbounded", "adaptive": map[string]any{"min": 1.0}},
				"b": map[string]any{"maxWaitDuration": 50}, // refused: no unit
			},
		}
	}
	tree := build()
	_, err := fileconfig.Decode(tree)
	if err == nil {
		t.Fatal("Decode accepted a duration without a unit and a config key 7")
	}
	if !reflect.DeepEqual(tree, build()) {
		t.Fatalf("Decode changed the caller's tree:\n got %#v\nwant %#v", tree, build())
	}
}

// UnmarshalYAML: "An empty document leaves f unchanged", and every format
// goes through Decode. A YAML library that fails gets its own error back,
// and a document Decode refuses leaves f as it was too (UnmarshalJSON's
// rule), so a reload that fails keeps the last good file.
func TestHostileUnmarshalYAMLKeepsTheFileWhenItGetsNothingOrFails(t *testing.T) {
	good := decodeJSON(t, issueConfigJSON)
	libErr := errors.New("yaml: line 3: mapping values are not allowed here")
	for name, c := range map[string]struct {
		tree    any
		libErr  error
		wantErr func(error) bool
	}{
		"an empty document":       {tree: nil, wantErr: func(err error) bool { return err == nil }},
		"the library's own error": {libErr: libErr, wantErr: func(err error) bool { return err == libErr }},
		"a refused document": {tree: map[string]any{"instances": map[string]any{"a": map[string]any{"maxConcurrentCalls": 0}}},
			wantErr: func(err error) bool { return errors.Is(err, bulkhead.ErrInvalidConfig) }},
	} {
		f := good
		err := f.UnmarshalYAML(func(into any) error {
			if c.libErr != nil {
				return c.libErr
			}
			*into.(*any) = c.tree
			return nil
		})
		if !c.wantErr(err) {
			t.Errorf("%s: UnmarshalYAML = %v", name, err)
		}
		if !reflect.DeepEqual(f, good) {
			t.Errorf("%s: the file changed to %+v", name, f)
		}
	}
}

// Decode: integers may be numbers of any Go type a decoder gives, and a
// count must be an integer; store's localFraction must be in (0, 1]. NaN,
// infinities and integers past int's range must be refused by name, never
// wrapped round into a valid-looking count, and the largest int is
// bulkhead.Unbounded ("reads back the same").
func TestHostileNaNInfinitiesAndNumbersPastIntAreRefused(t *testing.T) {
	entry := func(key string, v any) any {
		return map[string]any{"instances": map[string]any{"a": map[string]any{key: v}}}
	}
	refused := map[string]any{
		"count NaN":         entry("maxConcurrentCalls", math.NaN()),
		"count +Inf":        entry("maxConcurrentCalls", math.Inf(1)),
		"count 2^63 float":  entry("maxConcurrentCalls", math.Exp2(63)),
		"count MaxUint64":   entry("maxConcurrentCalls", uint64(math.MaxUint64)),
		"count -Inf queue":  entry("maxQueuedCalls", math.Inf(-1)),
		"duration NaN":      entry("maxWaitDuration", math.NaN()),
		"fraction NaN":      entry("store", map[string]any{"type": "redis", "unreachable": "fail-over", "localFraction": math.NaN()}),
		"fraction +Inf":     entry("store", map[string]any{"type": "redis", "unreachable": "fail-over", "localFraction": math.Inf(1)}),
		"fraction NaN text": entry("store", map[string]any{"type": "redis", "unreachable": "fail-over", "localFraction": "NaN"}),
	}
	for name, tree := range refused {
		_, err := fileconfig.Decode(tree)
		var fe *fileconfig.Error
		if !errors.As(err, &fe) || fe.Name != "a" {
			t.Errorf("%s: Decode = %v, want an *Error naming instance a", name, err)
		}
	}
	f, err := fileconfig.Decode(entry("maxQueuedCalls", uint64(math.MaxInt64)))
	if err != nil {
		t.Fatal(err)
	}
	res, err := f.Resolve()
	if err != nil || res.Instances["a"].Config.MaxQueuedCalls != bulkhead.Unbounded {
		t.Fatalf("maxQueuedCalls MaxInt64: %v, %v; want bulkhead.Unbounded", res.Instances["a"].Config.MaxQueuedCalls, err)
	}
}

// Error: a file with several problems "fails with all of them joined by
// errors.Join, in the order of the file (top-level keys, then configs,
// then instances, then budgets, each by name, then by key); errors.As
// finds the first". The budgets came last without the doc saying so
// (corrected by this audit); a budget named "a" does not go before an
// instance named "z".
func TestHostileProblemsOfEverySectionComeInTheDocumentedOrder(t *testing.T) {
	_, err := fileconfig.Decode(map[string]any{
		"budget":    5,
		"budgets":   map[string]any{"a": map[string]any{"size": 4, "classes": []any{map[string]any{"name": "c", "share": -1}}}},
		"instances": map[string]any{"z": map[string]any{"maxConcurrentCalls": 0}},
		"configs":   map[string]any{"zz": map[string]any{"maxQueuedCalls": -1}},
	})
	errs := fileErrors(t, err)
	var got []string
	for _, e := range errs {
		got = append(got, e.Kind+" "+e.Name)
	}
	if want := []string{" ", "config zz", "instance z", "budget a"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("problems in the order %q, want %q", got, want)
	}
	var first *fileconfig.Error
	if !errors.As(err, &first) || first.Key != "budget" {
		t.Fatalf("errors.As found %v, want the top-level problem first", first)
	}
}

// Decode takes "the generic tree that a decoder produces ... That is what
// encoding/json (best with UseNumber), the YAML libraries, TOML libraries
// and viper's AllSettings give for an any." A TOML library that decodes an
// array of tables ([[budgets.hub.classes]]) as []map[string]any
// (BurntSushi/toml, pelletier/go-toml v1 and the viper settings built on
// them) gives the budgets' lists in that shape: they must decode as the
// []any of encoding/json does.
func TestHostileDecodeTakesTheListsATOMLLibraryGives(t *testing.T) {
	tomlShaped := map[string]any{"budgets": map[string]any{"hub": map[string]any{
		"size":    int64(10),
		"classes": []map[string]any{{"name": "interactive"}, {"name": "batch", "share": int64(2)}},
		"groups":  []map[string]any{{"name": "gold", "nominal": int64(4)}},
	}}}
	jsonShaped := map[string]any{"budgets": map[string]any{"hub": map[string]any{
		"size":    int64(10),
		"classes": []any{map[string]any{"name": "interactive"}, map[string]any{"name": "batch", "share": int64(2)}},
		"groups":  []any{map[string]any{"name": "gold", "nominal": int64(4)}},
	}}}
	want, err := fileconfig.Decode(jsonShaped)
	if err != nil {
		t.Fatal(err)
	}
	got, err := fileconfig.Decode(tomlShaped)
	if err != nil {
		t.Fatalf("Decode of a TOML-shaped tree: %v", err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("TOML-shaped tree decoded to %+v, want %+v (as the JSON-shaped one)", got, want)
	}
}

// NewRegistry: "opts are applied first, so a config of f replaces a
// bulkhead.WithConfig of the same name". The doc also said the default is
// "f's "default" (bulkhead.DefaultConfig() if f has none)"; with opts that
// set a default and a file without one, the registry keeps the opts' (as
// Apply keeps a registry's default), which the doc now says. A config the
// file names replaces the opts' one of that name; the file's instances
// resolve from bulkhead.DefaultConfig() all the same.
func TestHostileNewRegistryKeepsTheDefaultOfItsOptionsWhenTheFileHasNone(t *testing.T) {
	fromOpts := bulkhead.Config{MaxConcurrentCalls: 3}
	r, err := fileconfig.NewRegistry(decodeJSON(t, `{"configs": {"big": {"maxConcurrentCalls": 60}}, "instances": {"a": {}}}`),
		bulkhead.WithConfig(bulkhead.DefaultConfigName, fromOpts), bulkhead.WithConfig("big", bulkhead.Config{MaxConcurrentCalls: 7}))
	if err != nil {
		t.Fatal(err)
	}
	later, err := r.Get("later")
	if err != nil {
		t.Fatal(err)
	}
	big, err := r.GetWithConfig("b", "big")
	if err != nil {
		t.Fatal(err)
	}
	a, _ := r.Find("a")
	if later.Config() != fromOpts || big.Config().MaxConcurrentCalls != 60 || a.Config() != bulkhead.DefaultConfig() {
		t.Fatalf("later %v (want the opts' default), big %v (want the file's 60), instance a %v (want DefaultConfig)", later.Config(), big.Config(), a.Config())
	}
	r, err = fileconfig.NewRegistry(decodeJSON(t, `{"configs": {"default": {"maxConcurrentCalls": 9}}}`), bulkhead.WithConfig(bulkhead.DefaultConfigName, fromOpts))
	if err != nil {
		t.Fatal(err)
	}
	if s, _ := r.Get("later"); s.Config().MaxConcurrentCalls != 9 {
		t.Fatalf("later %v, want the file's default (9) over the opts'", s.Config())
	}
}

// Error.Key is "the key as written", and the problems of a list item name
// it as "classes[1].share" (Error's doc, docs/configuration.md). A JSON key
// given twice inside a list item must be named the same way, not
// "classes.0.name" (it was, before this audit).
func TestHostileAKeyGivenTwiceInAListItemIsNamedAsTheItemsOtherProblems(t *testing.T) {
	var f fileconfig.File
	err := json.Unmarshal([]byte(`{"budgets": {"hub": {"size": 4, "classes": [{"name": "a"}, {"name": "b", "share": -1, "share": -2}]}}}`), &f)
	var keys []string
	for _, e := range fileErrors(t, err) {
		keys = append(keys, e.Key)
	}
	if !slices.Contains(keys, "classes[1].share") || slices.ContainsFunc(keys, func(k string) bool { return strings.Contains(k, ".1.") }) {
		t.Fatalf("problem keys %q, want the duplicate named classes[1].share", keys)
	}
}
