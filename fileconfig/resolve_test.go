package fileconfig_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/fileconfig"
)

// issueConfigJSON is the example of issue 9 in JSON.
const issueConfigJSON = `{
  "configs": {
    "default": {"maxConcurrentCalls": 20, "maxWaitDuration": "50ms", "maxQueuedCalls": 100},
    "big":     {"baseConfig": "default", "maxConcurrentCalls": 60}
  },
  "instances": {
    "walmart":   {"baseConfig": "big"},
    "carrefour": {"maxWaitDuration": "0s"}
  }
}`

func decodeJSON(t *testing.T, doc string) fileconfig.File {
	t.Helper()
	var f fileconfig.File
	if err := json.Unmarshal([]byte(doc), &f); err != nil {
		t.Fatalf("json.Unmarshal: %v", err)
	}
	return f
}

func resolveJSON(t *testing.T, doc string) fileconfig.Resolved {
	t.Helper()
	res, err := decodeJSON(t, doc).Resolve()
	if err != nil {
		t.Fatalf("Resolve: %v", err)
	}
	return res
}

// configs returns the configurations of the entries.
func configs(m map[string]fileconfig.Entry) map[string]bulkhead.Config {
	out := make(map[string]bulkhead.Config, len(m))
	for name, e := range m {
		out[name] = e.Config
	}
	return out
}

// defaults returns bulkhead.DefaultConfig() changed by f.
func defaults(f func(*bulkhead.Config)) bulkhead.Config {
	c := bulkhead.DefaultConfig()
	f(&c)
	return c
}

func TestResolveAppliesBaseConfigsAndDefault(t *testing.T) {
	res := resolveJSON(t, issueConfigJSON)
	wantConfigs := map[string]bulkhead.Config{
		"default": {MaxConcurrentCalls: 20, MaxWaitDuration: 50 * time.Millisecond, MaxQueuedCalls: 100},
		"big":     {MaxConcurrentCalls: 60, MaxWaitDuration: 50 * time.Millisecond, MaxQueuedCalls: 100},
	}
	wantInstances := map[string]bulkhead.Config{
		"walmart":   {MaxConcurrentCalls: 60, MaxWaitDuration: 50 * time.Millisecond, MaxQueuedCalls: 100},
		"carrefour": {MaxConcurrentCalls: 20, MaxWaitDuration: 0, MaxQueuedCalls: 100},
	}
	if got := configs(res.Configs); !reflect.DeepEqual(got, wantConfigs) {
		t.Errorf("configs:\n got %v\nwant %v", got, wantConfigs)
	}
	if got := configs(res.Instances); !reflect.DeepEqual(got, wantInstances) {
		t.Errorf("instances:\n got %v\nwant %v", got, wantInstances)
	}
}

func TestConfigWithoutBaseInheritsDefaultConfig(t *testing.T) {
	res := resolveJSON(t, `{"configs": {"default": {"maxWaitDuration": "1s"}, "small": {"maxConcurrentCalls": 2}}}`)
	want := defaults(func(c *bulkhead.Config) { c.MaxConcurrentCalls, c.MaxWaitDuration = 2, time.Second })
	if got := res.Configs["small"].Config; got != want {
		t.Fatalf("small = %v, want %v", got, want)
	}
	// "default" itself inherits the built-in defaults.
	if got, want := res.Configs["default"].Config, defaults(func(c *bulkhead.Config) { c.MaxWaitDuration = time.Second }); got != want {
		t.Fatalf("default = %v, want %v", got, want)
	}
}

func TestWithoutDefaultEntriesInheritBuiltinDefaults(t *testing.T) {
	res := resolveJSON(t, `{"instances": {"a": {"maxQueuedCalls": 3}, "b": null}}`)
	if got := res.Configs["default"].Config; got != bulkhead.DefaultConfig() {
		t.Fatalf("default = %v, want DefaultConfig()", got)
	}
	if got, want := res.Instances["a"].Config, defaults(func(c *bulkhead.Config) { c.MaxQueuedCalls = 3 }); got != want {
		t.Fatalf("a = %v, want %v", got, want)
	}
	if got := res.Instances["b"].Config; got != bulkhead.DefaultConfig() {
		t.Fatalf("b (null entry) = %v, want DefaultConfig()", got)
	}
}

func TestExplicitZeroOverridesInheritedValue(t *testing.T) {
	res := resolveJSON(t, `{
		"configs": {"default": {"maxWaitDuration": "50ms", "maxQueuedCalls": 100, "queueOrder": "LIFO"}},
		"instances": {"x": {"maxWaitDuration": 0, "maxQueuedCalls": 0, "queueOrder": "fifo"}, "y": {}}}`)
	// maxQueuedCalls 0 is no queue, not "no bound".
	if got, want := res.Instances["x"].Config, (bulkhead.Config{MaxConcurrentCalls: 25}); got != want {
		t.Fatalf("x = %v, want %v", got, want)
	}
	want := bulkhead.Config{MaxConcurrentCalls: 25, MaxWaitDuration: 50 * time.Millisecond, MaxQueuedCalls: 100, QueueOrder: bulkhead.LIFO}
	if got := res.Instances["y"].Config; got != want {
		t.Fatalf("y = %v, want %v", got, want)
	}
}

func TestUnboundedCountsAreWrittenAsUnbounded(t *testing.T) {
	res := resolveJSON(t, `{"configs": {"default": {"maxQueuedCalls": 5}},
		"instances": {"x": {"maxQueuedCalls": "unbounded", "maxWaitDuration": "1s"}, "y": {"maxConcurrentCalls": "Unbounded"}}}`)
	if got := res.Instances["x"].Config.MaxQueuedCalls; got != bulkhead.Unbounded {
		t.Errorf("x: maxQueuedCalls %d, want bulkhead.Unbounded", got)
	}
	if got := res.Instances["y"].Config; got.MaxConcurrentCalls != bulkhead.Unbounded || got.MaxQueuedCalls != 5 {
		t.Errorf("y = %v, want unbounded calls and the inherited queue of 5", got)
	}
}

func TestMultiLevelInheritance(t *testing.T) {
	res := resolveJSON(t, `{"configs": {
		"a": {"maxConcurrentCalls": 1, "maxWaitDuration": "1s"},
		"b": {"baseConfig": "a", "maxQueuedCalls": 7},
		"c": {"baseConfig": "b", "maxConcurrentCalls": 3}}}`)
	if got, want := res.Configs["c"].Config, (bulkhead.Config{MaxConcurrentCalls: 3, MaxWaitDuration: time.Second, MaxQueuedCalls: 7}); got != want {
		t.Fatalf("c = %v, want %v", got, want)
	}
}

func TestRelaxedKeysMatchIgnoringCaseDashAndUnderscore(t *testing.T) {
	res := resolveJSON(t, `{"Instances": {"p": {"max-concurrent-calls": 4, "MAX_WAIT_DURATION": "2s", "maxqueuedcalls": "9", "base-config": "d"}},
		"configs": {"d": {"queue_order": "LIFO"}}}`)
	want := bulkhead.Config{MaxConcurrentCalls: 4, MaxWaitDuration: 2 * time.Second, MaxQueuedCalls: 9, QueueOrder: bulkhead.LIFO}
	if got := res.Instances["p"].Config; got != want {
		t.Fatalf("p = %v, want %v", got, want)
	}
}

// fileErrors returns the *fileconfig.Error values in err (joined or single).
func fileErrors(t *testing.T, err error) []*fileconfig.Error {
	t.Helper()
	if err == nil {
		t.Fatal("want an error, got nil")
	}
	if !errors.Is(err, bulkhead.ErrInvalidConfig) {
		t.Errorf("errors.Is(%v, ErrInvalidConfig) = false", err)
	}
	var errs []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	} else {
		errs = []error{err}
	}
	var out []*fileconfig.Error
	for _, e := range errs {
		var fe *fileconfig.Error
		if !errors.As(e, &fe) {
			t.Fatalf("error %v (%T) is not a *fileconfig.Error", e, e)
		}
		out = append(out, fe)
	}
	return out
}

// where lists the entry and key of each error: "instance a maxQueuedCalls".
func where(errs []*fileconfig.Error) []string {
	var out []string
	for _, e := range errs {
		out = append(out, e.Kind+" "+e.Name+" "+e.Key)
	}
	return out
}

func TestRuleBreaksAreReportedAtTheEntriesThatSetTheValue(t *testing.T) {
	f := fileconfig.File{
		Configs: map[string]fileconfig.Spec{
			"c": {MaxConcurrentCalls: new(0)},
			"d": {BaseConfig: "c", MaxWaitDuration: new(fileconfig.Duration(-time.Second))},
		},
		Instances: map[string]fileconfig.Spec{
			"a":     {MaxQueuedCalls: new(-2), MaxConcurrentCalls: new(0)},
			"b":     {BaseConfig: "c"},                             // inherits c's 0: reported at c only
			"fixed": {BaseConfig: "d", MaxConcurrentCalls: new(3)}, // overrides c's 0; inherits d's -1s
		},
	}
	_, err := f.Resolve()
	got := where(fileErrors(t, err))
	want := []string{"config c maxConcurrentCalls", "config d maxWaitDuration", "instance a maxConcurrentCalls", "instance a maxQueuedCalls"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("errors at %q, want %q:\n%v", got, want, err)
	}
}

func TestGoConstructedSpecIsValidated(t *testing.T) {
	f := fileconfig.File{Instances: map[string]fileconfig.Spec{
		"p": {QueueOrder: new(bulkhead.QueueOrder(7))},
	}}
	_, err := f.Resolve()
	errs := fileErrors(t, err)
	if got, want := errs[0].Error(), `bulkhead "p": queueOrder QueueOrder(7): must be FIFO or LIFO`; got != want {
		t.Fatalf("error %q, want %q", got, want)
	}
}

func TestInheritanceProblemsAndRuleBreaksAreReportedTogether(t *testing.T) {
	f := fileconfig.File{
		Configs: map[string]fileconfig.Spec{
			"a": {BaseConfig: "b", MaxQueuedCalls: new(-1)},
			"b": {BaseConfig: "a"},
		},
		Instances: map[string]fileconfig.Spec{
			"x": {BaseConfig: "huge", MaxConcurrentCalls: new(0)},
		},
	}
	_, err := f.Resolve()
	got := where(fileErrors(t, err))
	want := []string{"config a maxQueuedCalls", "config b baseConfig", "instance x baseConfig", "instance x maxConcurrentCalls"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("errors at %q, want %q:\n%v", got, want, err)
	}
}

func TestARuleBetweenFieldsIsReportedAtTheEntryThatBreaksIt(t *testing.T) {
	var f fileconfig.File
	err := json.Unmarshal([]byte(`{"configs": {"nowait": {"maxQueuedCalls": 0}},
		"instances": {"x": {"baseConfig": "nowait", "maxWaitDuration": "1s"}, "y": {"baseConfig": "nowait"}}}`), &f)
	errs := fileErrors(t, err)
	if len(errs) != 1 {
		t.Fatalf("got %d errors, want 1: %v", len(errs), err)
	}
	want := `bulkhead "x": maxQueuedCalls 0: must be >= 1 when MaxWaitDuration is positive (bulkhead.Unbounded for no bound)`
	if got := errs[0].Error(); got != want {
		t.Fatalf("error:\n got %s\nwant %s", got, want)
	}
}
