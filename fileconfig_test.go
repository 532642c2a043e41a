package bulkhead_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/testkit"
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

func decodeJSON(t *testing.T, doc string) bulkhead.RegistryConfig {
	t.Helper()
	var rc bulkhead.RegistryConfig
	if err := json.Unmarshal([]byte(doc), &rc); err != nil {
		t.Fatalf("json.Unmarshal: %v", err)
	}
	return rc
}

func resolveJSON(t *testing.T, doc string) bulkhead.ResolvedConfig {
	t.Helper()
	res, err := decodeJSON(t, doc).Resolve()
	if err != nil {
		t.Fatalf("Resolve: %v", err)
	}
	return res
}

func TestResolveAppliesBaseConfigsAndDefault(t *testing.T) {
	res := resolveJSON(t, issueConfigJSON)
	def := bulkhead.Config{MaxConcurrentCalls: 20, MaxWaitDuration: 50 * time.Millisecond, MaxQueuedCalls: 100}
	want := bulkhead.ResolvedConfig{
		Configs: map[string]bulkhead.Config{
			"default": def,
			"big":     {MaxConcurrentCalls: 60, MaxWaitDuration: 50 * time.Millisecond, MaxQueuedCalls: 100},
		},
		Instances: map[string]bulkhead.Config{
			"walmart":   {MaxConcurrentCalls: 60, MaxWaitDuration: 50 * time.Millisecond, MaxQueuedCalls: 100},
			"carrefour": {MaxConcurrentCalls: 20, MaxWaitDuration: 0, MaxQueuedCalls: 100},
		},
	}
	if !reflect.DeepEqual(res, want) {
		t.Fatalf("Resolve:\n got %+v\nwant %+v", res, want)
	}
}

func TestConfigWithoutBaseInheritsDefaultConfig(t *testing.T) {
	res := resolveJSON(t, `{"configs": {"default": {"maxWaitDuration": "1s"}, "small": {"maxConcurrentCalls": 2}}}`)
	if got, want := res.Configs["small"], (bulkhead.Config{MaxConcurrentCalls: 2, MaxWaitDuration: time.Second, MaxQueuedCalls: bulkhead.Unbounded}); got != want {
		t.Fatalf("small = %+v, want %+v", got, want)
	}
	// "default" itself inherits the built-in defaults.
	if got, want := res.Configs["default"], (bulkhead.Config{MaxConcurrentCalls: 25, MaxWaitDuration: time.Second, MaxQueuedCalls: bulkhead.Unbounded}); got != want {
		t.Fatalf("default = %+v, want %+v", got, want)
	}
}

func TestWithoutDefaultEntriesInheritBuiltinDefaults(t *testing.T) {
	res := resolveJSON(t, `{"instances": {"a": {"maxQueuedCalls": 3}, "b": null}}`)
	if got := res.Configs["default"]; got != bulkhead.DefaultConfig() {
		t.Fatalf("default = %+v, want DefaultConfig()", got)
	}
	want := bulkhead.DefaultConfig()
	want.MaxQueuedCalls = 3
	if got := res.Instances["a"]; got != want {
		t.Fatalf("a = %+v, want %+v", got, want)
	}
	if got := res.Instances["b"]; got != bulkhead.DefaultConfig() {
		t.Fatalf("b (null entry) = %+v, want DefaultConfig()", got)
	}
}

func TestExplicitZeroOverridesInheritedValue(t *testing.T) {
	res := resolveJSON(t, `{
		"configs": {"default": {"maxWaitDuration": "50ms", "maxQueuedCalls": 100, "queueOrder": "LIFO"}},
		"instances": {"x": {"maxWaitDuration": 0, "maxQueuedCalls": 0, "queueOrder": "fifo"}, "y": {}}}`)
	if got, want := res.Instances["x"], (bulkhead.Config{MaxConcurrentCalls: 25}); got != want {
		t.Fatalf("x = %+v, want %+v", got, want)
	}
	want := bulkhead.Config{MaxConcurrentCalls: 25, MaxWaitDuration: 50 * time.Millisecond, MaxQueuedCalls: 100, QueueOrder: bulkhead.LIFO}
	if got := res.Instances["y"]; got != want {
		t.Fatalf("y = %+v, want %+v", got, want)
	}
}

func TestMultiLevelInheritance(t *testing.T) {
	res := resolveJSON(t, `{"configs": {
		"a": {"maxConcurrentCalls": 1, "maxWaitDuration": "1s"},
		"b": {"baseConfig": "a", "maxQueuedCalls": 7},
		"c": {"baseConfig": "b", "maxConcurrentCalls": 3}}}`)
	if got, want := res.Configs["c"], (bulkhead.Config{MaxConcurrentCalls: 3, MaxWaitDuration: time.Second, MaxQueuedCalls: 7}); got != want {
		t.Fatalf("c = %+v, want %+v", got, want)
	}
}

func TestRelaxedKeysMatchIgnoringCaseDashAndUnderscore(t *testing.T) {
	res := resolveJSON(t, `{"Instances": {"p": {"max-concurrent-calls": 4, "MAX_WAIT_DURATION": "2s", "maxqueuedcalls": "9", "base-config": "d"}},
		"configs": {"d": {"queue_order": "LIFO"}}}`)
	want := bulkhead.Config{MaxConcurrentCalls: 4, MaxWaitDuration: 2 * time.Second, MaxQueuedCalls: 9, QueueOrder: bulkhead.LIFO}
	if got := res.Instances["p"]; got != want {
		t.Fatalf("p = %+v, want %+v", got, want)
	}
}

// specErrors returns the *SpecError values in err (joined or single).
func specErrors(t *testing.T, err error) []*bulkhead.SpecError {
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
	var out []*bulkhead.SpecError
	for _, e := range errs {
		var se *bulkhead.SpecError
		if !errors.As(e, &se) {
			t.Fatalf("error %v (%T) is not a *SpecError", e, e)
		}
		out = append(out, se)
	}
	return out
}

func TestBadValuesNameTheEntryTheKeyAndTheValue(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		want string // the whole message
	}{
		{"duration without unit", `{"instances": {"walmart": {"maxWaitDuration": 50}}}`,
			`bulkhead: instance "walmart": maxWaitDuration 50: not a duration: want a number with a unit, such as "50ms" or "0s"`},
		{"duration text", `{"instances": {"walmart": {"maxWaitDuration": "5 parsecs"}}}`,
			`bulkhead: instance "walmart": maxWaitDuration "5 parsecs": not a duration: want a number with a unit, such as "50ms" or "0s"`},
		{"negative duration", `{"configs": {"slow": {"maxWaitDuration": "-5s"}}}`,
			`bulkhead: config "slow": maxWaitDuration -5s: must be >= 0`},
		{"zero calls", `{"instances": {"walmart": {"maxConcurrentCalls": 0}}}`,
			`bulkhead: instance "walmart": maxConcurrentCalls 0: must be >= 1`},
		{"negative queue", `{"instances": {"carrefour": {"maxQueuedCalls": -1}}}`,
			`bulkhead: instance "carrefour": maxQueuedCalls -1: must be >= 0`},
		{"string for integer", `{"instances": {"walmart": {"maxConcurrentCalls": "twenty"}}}`,
			`bulkhead: instance "walmart": maxConcurrentCalls "twenty": want an integer, got a string`},
		{"fraction for integer", `{"instances": {"walmart": {"maxConcurrentCalls": 2.5}}}`,
			`bulkhead: instance "walmart": maxConcurrentCalls 2.5: want an integer, got a number`},
		{"queue order", `{"instances": {"walmart": {"queueOrder": "random"}}}`,
			`bulkhead: instance "walmart": queueOrder "random": not a queue order: want FIFO or LIFO`},
		{"base config type", `{"instances": {"walmart": {"baseConfig": 3}}}`,
			`bulkhead: instance "walmart": baseConfig 3: want the name of a config, got a number`},
		{"unknown key", `{"instances": {"walmart": {"maxConcurentCalls": 3}}}`,
			`bulkhead: instance "walmart": maxConcurentCalls: unknown key (known: baseConfig, maxConcurrentCalls, maxQueuedCalls, maxWaitDuration, queueOrder)`},
		{"resilience4j key", `{"configs": {"default": {"writableStackTraceEnabled": true}}}`,
			`bulkhead: config "default": writableStackTraceEnabled: resilience4j setting with no equivalent here: errors carry no stack trace; remove it`},
		{"key twice", `{"instances": {"walmart": {"maxQueuedCalls": 1, "max-queued-calls": 2}}}`,
			`bulkhead: instance "walmart": maxQueuedCalls: given twice (also as "max-queued-calls")`},
		{"entry not a mapping", `{"instances": {"walmart": 20}}`,
			`bulkhead: instance "walmart": want a mapping of settings, got a number`},
		{"section not a mapping", `{"instances": ["walmart"]}`,
			`bulkhead: registry config: instances: want a mapping from names to settings, got a list`},
		{"unknown top-level key", `{"bulkheads": {}}`,
			`bulkhead: registry config: bulkheads: unknown key (known: configs, instances)`},
		{"document not a mapping", `[1]`,
			`bulkhead: registry config: want a mapping with the keys configs and instances, got a list`},
		{"unknown base", `{"configs": {"big": {}}, "instances": {"walmart": {"baseConfig": "huge"}}}`,
			`bulkhead: instance "walmart": baseConfig "huge": no such config (known: big)`},
		{"unknown base, no configs", `{"instances": {"walmart": {"baseConfig": "huge"}}}`,
			`bulkhead: instance "walmart": baseConfig "huge": no such config (known: none)`},
		{"self cycle", `{"configs": {"a": {"baseConfig": "a"}}}`,
			`bulkhead: config "a": baseConfig "a": inheritance cycle a -> a`},
		{"two-step cycle", `{"configs": {"a": {"baseConfig": "b"}, "b": {"baseConfig": "a"}}, "instances": {"x": {"baseConfig": "a"}}}`,
			`bulkhead: config "b": baseConfig "a": inheritance cycle a -> b -> a`},
		{"cycle through default", `{"configs": {"default": {"baseConfig": "big"}, "big": {}}}`,
			`bulkhead: config "default": baseConfig "big": inheritance cycle big -> default -> big (an entry without baseConfig inherits "default")`},
		{"cycle closed by an implicit base", `{"configs": {"default": {"baseConfig": "x"}, "x": {"baseConfig": "y"}, "y": {}}}`,
			`bulkhead: config "y": inheritance cycle default -> x -> y -> default (an entry without baseConfig inherits "default")`},
		{"empty name", `{"instances": {"": {}}}`,
			`bulkhead: instance "": the name must not be empty`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var rc bulkhead.RegistryConfig
			err := json.Unmarshal([]byte(tt.doc), &rc)
			if err == nil {
				_, err = rc.Resolve()
			}
			errs := specErrors(t, err)
			if len(errs) != 1 {
				t.Fatalf("got %d errors, want 1: %v", len(errs), err)
			}
			if got := errs[0].Error(); got != tt.want {
				t.Fatalf("error:\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestEveryProblemIsReportedInOrder(t *testing.T) {
	var rc bulkhead.RegistryConfig
	err := json.Unmarshal([]byte(`{"Instances": {"b": {"maxQueuedCalls": "x"}, "a": {"queueOrder": 1, "maxConcurrentCalls": []}},
		"configs": {"z": {"bogus": 1}}}`), &rc)
	errs := specErrors(t, err)
	var got []string
	for _, e := range errs {
		got = append(got, e.Kind+" "+e.Name+" "+e.Key)
	}
	want := []string{"config z bogus", "instance a maxConcurrentCalls", "instance a queueOrder", "instance b maxQueuedCalls"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("errors in order %q, want %q", got, want)
	}
	if !reflect.DeepEqual(rc, bulkhead.RegistryConfig{}) {
		t.Fatalf("a failed decode changed the config: %+v", rc)
	}
}

func TestValidationErrorsAreAllReported(t *testing.T) {
	rc := decodeJSON(t, `{"configs": {"c": {"maxConcurrentCalls": 0}}, "instances": {"a": {"maxQueuedCalls": -2}, "b": {"baseConfig": "c"}}}`)
	_, err := rc.Resolve()
	errs := specErrors(t, err)
	// "b" inherits the broken "c": only "c" is reported for it.
	if len(errs) != 2 || errs[0].Name != "c" || errs[1].Name != "a" {
		t.Fatalf("errors = %v, want config c then instance a", err)
	}
}

func TestGoConstructedSpecIsValidated(t *testing.T) {
	rc := bulkhead.RegistryConfig{Instances: map[string]bulkhead.ConfigSpec{
		"p": {QueueOrder: new(bulkhead.QueueOrder(7))},
	}}
	_, err := rc.Resolve()
	errs := specErrors(t, err)
	if got, want := errs[0].Error(), `bulkhead: instance "p": queueOrder QueueOrder(7): must be FIFO or LIFO`; got != want {
		t.Fatalf("error %q, want %q", got, want)
	}
}

func TestDurationText(t *testing.T) {
	for text, want := range map[string]time.Duration{"50ms": 50 * time.Millisecond, "0s": 0, "0": 0, "1m30s": 90 * time.Second, "1.5s": 1500 * time.Millisecond} {
		var d bulkhead.Duration
		if err := d.UnmarshalText([]byte(text)); err != nil || time.Duration(d) != want {
			t.Errorf("UnmarshalText(%q) = %v, %v; want %v", text, time.Duration(d), err, want)
		}
		out, _ := d.MarshalText()
		var back bulkhead.Duration
		if err := back.UnmarshalText(out); err != nil || back != d {
			t.Errorf("round trip of %q through %q = %v, %v", text, out, back, err)
		}
	}
	for _, text := range []string{"50", "", "fast", "5 parsecs"} {
		d := bulkhead.Duration(time.Second)
		err := d.UnmarshalText([]byte(text))
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("%q", text)) {
			t.Errorf("UnmarshalText(%q) = %v, want an error quoting the text", text, err)
		}
		if d != bulkhead.Duration(time.Second) {
			t.Errorf("UnmarshalText(%q) changed the value to %v", text, d)
		}
	}
}

func TestQueueOrderText(t *testing.T) {
	for text, want := range map[string]bulkhead.QueueOrder{"FIFO": bulkhead.FIFO, "lifo": bulkhead.LIFO, "Lifo": bulkhead.LIFO} {
		var o bulkhead.QueueOrder
		if err := o.UnmarshalText([]byte(text)); err != nil || o != want {
			t.Errorf("UnmarshalText(%q) = %v, %v; want %v", text, o, err, want)
		}
	}
	o := bulkhead.LIFO
	if err := o.UnmarshalText([]byte("random")); err == nil || o != bulkhead.LIFO {
		t.Errorf("UnmarshalText(random) = %v, value %v; want an error and no change", err, o)
	}
	if out, err := bulkhead.LIFO.MarshalText(); err != nil || string(out) != "LIFO" {
		t.Errorf("LIFO.MarshalText() = %q, %v", out, err)
	}
	if _, err := bulkhead.QueueOrder(9).MarshalText(); err == nil {
		t.Error("QueueOrder(9).MarshalText() succeeded, want an error")
	}
}

func TestJSONRoundTripKeepsTheConfig(t *testing.T) {
	rc := decodeJSON(t, `{"configs": {"default": {"maxWaitDuration": "1m30s", "queueOrder": "LIFO"}},
		"instances": {"walmart": {"baseConfig": "default", "maxConcurrentCalls": 3, "maxQueuedCalls": 0}}}`)
	out, err := json.Marshal(rc)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), `"maxWaitDuration":"1m30s"`) || !strings.Contains(string(out), `"queueOrder":"LIFO"`) {
		t.Errorf("json.Marshal = %s, want durations and queue orders as text", out)
	}
	back := decodeJSON(t, string(out))
	if !reflect.DeepEqual(back, rc) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", back, rc)
	}
}

func TestJSONNullLeavesTheConfigUnchanged(t *testing.T) {
	rc := decodeJSON(t, issueConfigJSON)
	if err := json.Unmarshal([]byte(`null`), &rc); err != nil {
		t.Fatal(err)
	}
	if len(rc.Instances) != 2 {
		t.Fatalf("null replaced the config: %+v", rc)
	}
}

func TestDecodeRegistryConfigAcceptsGenericTrees(t *testing.T) {
	// The shape a YAML v2 decoder or viper produces: map[any]any, native ints,
	// a numeric instance name.
	tree := map[any]any{
		"instances": map[any]any{
			123:       map[any]any{"maxConcurrentCalls": uint64(4), "maxWaitDuration": "2s"},
			"carrier": map[string]any{"maxQueuedCalls": int64(5), "maxWaitDuration": 0.0},
		},
	}
	rc, err := bulkhead.DecodeRegistryConfig(tree)
	if err != nil {
		t.Fatal(err)
	}
	res, err := rc.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := res.Instances["123"], (bulkhead.Config{MaxConcurrentCalls: 4, MaxWaitDuration: 2 * time.Second, MaxQueuedCalls: bulkhead.Unbounded}); got != want {
		t.Errorf("123 = %+v, want %+v", got, want)
	}
	if got, want := res.Instances["carrier"], (bulkhead.Config{MaxConcurrentCalls: 25, MaxQueuedCalls: 5}); got != want {
		t.Errorf("carrier = %+v, want %+v", got, want)
	}
	if _, err := bulkhead.DecodeRegistryConfig(map[string]any{"instances": map[string]any{"x": map[string]any{"maxQueuedCalls": uint64(1) << 63}}}); err == nil {
		t.Error("an integer above MaxInt was accepted")
	}
}

func TestNewRegistryFromConfigCreatesInstances(t *testing.T) {
	r, err := bulkhead.NewRegistryFromConfig(decodeJSON(t, issueConfigJSON))
	if err != nil {
		t.Fatal(err)
	}
	testkit.CheckRegistry(t, r)
	var names []string
	for _, s := range r.All() {
		names = append(names, s.Name())
	}
	if want := []string{"carrefour", "walmart"}; !reflect.DeepEqual(names, want) {
		t.Fatalf("bulkheads %v, want %v", names, want)
	}
	w, _ := r.Find("walmart")
	if got := w.Metrics(); got.MaxAllowedConcurrentCalls != 60 || got.MaxQueuedCalls != 100 || got.AvailableConcurrentCalls != 60 {
		t.Errorf("walmart metrics %+v, want 60 permits free and a 100-call queue", got)
	}
	// Later bulkheads use the file's "default"; named configs are known.
	other, err := r.Get("auchan")
	if err != nil || other.Config().MaxConcurrentCalls != 20 {
		t.Errorf("Bulkhead(auchan) = %+v, %v; want the file's default (20 calls)", other.Config(), err)
	}
	big, err := r.GetWithConfig("lidl", "big")
	if err != nil || big.Config().MaxConcurrentCalls != 60 {
		t.Errorf("BulkheadWithConfig(lidl, big) = %+v, %v; want 60 calls", big.Config(), err)
	}
}

func TestNewRegistryFromConfigFailsOnInvalidConfig(t *testing.T) {
	r, err := bulkhead.NewRegistryFromConfig(decodeJSON(t, `{"instances": {"walmart": {"maxConcurrentCalls": 0}}}`))
	if r != nil || !errors.Is(err, bulkhead.ErrInvalidConfig) {
		t.Fatalf("NewRegistryFromConfig = %v, %v; want nil and an invalid-config error", r, err)
	}
}

func TestApplyChangesLiveBulkheadsAndGrantsWaiters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, err := bulkhead.NewRegistryFromConfig(decodeJSON(t, `{"instances": {"walmart": {"maxConcurrentCalls": 1, "maxWaitDuration": "1h"}}}`))
		if err != nil {
			t.Fatal(err)
		}
		testkit.CheckRegistry(t, r)
		w, _ := r.Find("walmart")
		if !w.TryAcquirePermission() {
			t.Fatal("first permit refused")
		}
		waiter := w.AcquirePermissionAsync()
		if err := waiter.Err(); !errors.Is(err, bulkhead.ErrPending) {
			t.Fatalf("waiter = %v, want pending", err)
		}

		if err := r.Apply(decodeJSON(t, `{"instances": {"walmart": {"maxConcurrentCalls": 2, "maxWaitDuration": "1h"}, "lidl": {"maxQueuedCalls": 4}}}`)); err != nil {
			t.Fatal(err)
		}
		if err := waiter.Err(); err != nil {
			t.Fatalf("after growing to 2 permits the waiter is %v, want granted", err)
		}
		if got := w.Config().MaxConcurrentCalls; got != 2 {
			t.Errorf("walmart has %d permits after Apply, want 2", got)
		}
		lidl, ok := r.Find("lidl")
		if !ok || lidl.Config().MaxQueuedCalls != 4 {
			t.Errorf("Apply did not create lidl with its config")
		}
		w.FinishCall()
		w.FinishCall()
	})
}

func TestApplyWithInvalidConfigChangesNothing(t *testing.T) {
	r, err := bulkhead.NewRegistryFromConfig(decodeJSON(t, issueConfigJSON))
	if err != nil {
		t.Fatal(err)
	}
	bad := decodeJSON(t, `{"configs": {"default": {"maxConcurrentCalls": 5}}, "instances": {"walmart": {"maxConcurrentCalls": 1}, "carrefour": {"maxQueuedCalls": -1}, "new": {}}}`)
	err = r.Apply(bad)
	if !errors.Is(err, bulkhead.ErrInvalidConfig) || !strings.Contains(err.Error(), `instance "carrefour": maxQueuedCalls -1`) {
		t.Fatalf("Apply = %v, want the carrefour error", err)
	}
	if w, _ := r.Find("walmart"); w.Config().MaxConcurrentCalls != 60 {
		t.Errorf("walmart changed to %+v", w.Config())
	}
	if _, ok := r.Find("new"); ok {
		t.Error("a failed Apply created a bulkhead")
	}
	if s, _ := r.Get("later"); s.Config().MaxConcurrentCalls != 20 {
		t.Errorf("a failed Apply changed the default config: %+v", s.Config())
	}
}

func TestApplyKeepsUnlistedBulkheadsAndUpdatesDefault(t *testing.T) {
	r, err := bulkhead.NewRegistryFromConfig(decodeJSON(t, issueConfigJSON))
	if err != nil {
		t.Fatal(err)
	}
	adhoc, _ := r.Get("adhoc")
	if err := r.Apply(decodeJSON(t, `{"configs": {"default": {"maxConcurrentCalls": 7}}}`)); err != nil {
		t.Fatal(err)
	}
	if adhoc.Config().MaxConcurrentCalls != 20 {
		t.Errorf("an unlisted bulkhead changed: %+v", adhoc.Config())
	}
	if len(r.All()) != 3 {
		t.Errorf("Apply removed bulkheads: %d left", len(r.All()))
	}
	if s, _ := r.Get("later"); s.Config().MaxConcurrentCalls != 7 {
		t.Errorf("a bulkhead created after Apply has %+v, want the new default", s.Config())
	}
}

// TestApplyCreatesInstancesWithTheirConfigAtOnce races a reader with reloads
// that each create an instance whose config is not the default: whenever the
// reader finds the new instance, it must already have its own config.
func TestApplyCreatesInstancesWithTheirConfigAtOnce(t *testing.T) {
	r, err := bulkhead.NewRegistryFromConfig(decodeJSON(t, `{"configs": {"default": {"maxConcurrentCalls": 1}}}`))
	if err != nil {
		t.Fatal(err)
	}
	testkit.CheckRegistry(t, r)
	const reloads = 300
	var next atomic.Int64 // index of the instance the next reload creates
	done := make(chan struct{})
	var reader sync.WaitGroup
	reader.Go(func() {
		for {
			select {
			case <-done:
				return
			default:
			}
			name := fmt.Sprintf("n-%d", next.Load())
			if s, ok := r.Find(name); ok {
				if got := s.Config().MaxConcurrentCalls; got != 7 {
					t.Errorf("%s seen with %d permits, want its own 7", name, got)
					return
				}
			}
		}
	})
	for i := range reloads {
		rc := decodeJSON(t, fmt.Sprintf(`{"configs": {"default": {"maxConcurrentCalls": 1}}, "instances": {"n-%d": {"maxConcurrentCalls": 7}}}`, i))
		if err := r.Apply(rc); err != nil {
			t.Fatal(err)
		}
		next.Add(1)
	}
	close(done)
	reader.Wait()
}

// TestApplyUnderTrafficLeaksNoPermit reloads two alternating files while
// goroutines take and return permits: ChangeConfig must never lose or
// duplicate a permit, whatever it races with.
func TestApplyUnderTrafficLeaksNoPermit(t *testing.T) {
	files := []bulkhead.RegistryConfig{
		decodeJSON(t, `{"instances": {"p": {"maxConcurrentCalls": 1}, "q": {"maxConcurrentCalls": 5}}}`),
		decodeJSON(t, `{"instances": {"p": {"maxConcurrentCalls": 4}, "q": {"maxConcurrentCalls": 2}}}`),
	}
	r, err := bulkhead.NewRegistryFromConfig(files[0])
	if err != nil {
		t.Fatal(err)
	}
	testkit.CheckRegistry(t, r)
	var wg sync.WaitGroup
	for g := range 4 {
		name := []string{"p", "q"}[g%2]
		s, _ := r.Find(name)
		wg.Go(func() {
			for range 3000 {
				if s.TryAcquirePermission() {
					if m := s.Metrics(); m.InFlightCalls > 5 {
						t.Errorf("%s: %d permits held, more than any config allows", name, m.InFlightCalls)
					}
					s.FinishCall()
				}
			}
		})
	}
	workersDone := make(chan struct{})
	go func() { wg.Wait(); close(workersDone) }()
	// Reload until the workers are done, so every worker iteration races
	// with reloads.
	for i := 0; ; i++ {
		select {
		case <-workersDone:
			return
		default:
		}
		if err := r.Apply(files[i%2]); err != nil {
			t.Fatal(err)
		}
	}
}

func FuzzRegistryConfigJSON(f *testing.F) {
	f.Add(issueConfigJSON)
	f.Add(`{"configs": {"a": {"baseConfig": "b"}, "b": {"baseConfig": "a"}}}`)
	f.Add(`{"instances": {"x": {"max-wait-duration": "1h", "queueOrder": "lifo", "maxQueuedCalls": "3"}}}`)
	f.Add(`{"configs": {"default": {"baseConfig": "x"}, "x": {"maxConcurrentCalls": -1}}}`)
	f.Fuzz(func(t *testing.T, doc string) {
		var rc bulkhead.RegistryConfig
		if err := json.Unmarshal([]byte(doc), &rc); err != nil {
			return
		}
		res, err := rc.Resolve()
		if err != nil {
			for _, e := range specErrors(t, err) {
				if e.Problem == "" {
					t.Fatalf("error without a problem: %#v", e)
				}
			}
			return
		}
		if _, ok := res.Configs[bulkhead.DefaultConfigName]; !ok {
			t.Fatal("resolved configs lack the default")
		}
		for name, cfg := range res.Instances {
			if err := cfg.Validate(); err != nil {
				t.Fatalf("instance %q resolved to an invalid config: %v", name, err)
			}
		}
		// What was accepted survives a round trip through json.Marshal.
		out, err := json.Marshal(rc)
		if err != nil {
			t.Fatalf("json.Marshal: %v", err)
		}
		var back bulkhead.RegistryConfig
		if err := json.Unmarshal(out, &back); err != nil {
			t.Fatalf("re-decoding %s: %v", out, err)
		}
		res2, err := back.Resolve()
		if err != nil || !reflect.DeepEqual(res, res2) {
			t.Fatalf("round trip changed the resolution: %+v, %v; want %+v", res2, err, res)
		}
	})
}
