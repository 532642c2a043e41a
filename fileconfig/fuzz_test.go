package fileconfig_test

import (
	"encoding/json"
	"errors"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/adaptive"
	"github.com/rxbulkhead/bulkhead/fileconfig"
)

// FuzzConfig checks bulkhead.Config.Validate against the rules of Config
// field by field, New and ChangeConfig against Validate, and the loading of
// a configuration file (File from JSON, Resolve, NewRegistry) against both:
// whatever loads creates valid bulkheads with the resolved configs, and
// every error matches ErrInvalidConfig and names what is wrong.
func FuzzConfig(f *testing.F) {
	// More seeds live in testdata/fuzz/FuzzConfig.
	f.Add(int64(25), int64(0), int64(0), uint8(0), `{"configs":{"default":{"maxConcurrentCalls":20}}}`)
	f.Add(int64(0), int64(-1), int64(-1), uint8(3), `{"instances":{"a":{"maxWaitDuration":"-5ms"}}}`)
	f.Add(int64(3), int64(5), int64(9223372036854775807), uint8(1), `{"instances":{"a":{"maxQueuedCalls":"unbounded"},"b":{"maxQueuedCalls":-1,"maxWaitDuration":"x"}}}`)
	f.Fuzz(func(t *testing.T, calls, wait, queued int64, order uint8, doc string) {
		cfg := bulkhead.Config{MaxConcurrentCalls: int(calls), MaxWaitDuration: time.Duration(wait), MaxQueuedCalls: int(queued), QueueOrder: bulkhead.QueueOrder(order)}
		checkConfigRules(t, cfg)
		checkConfigFile(t, doc)
	})
}

func checkConfigRules(t *testing.T, cfg bulkhead.Config) {
	var fields []string
	if cfg.MaxConcurrentCalls < 1 {
		fields = append(fields, "MaxConcurrentCalls")
	}
	if cfg.MaxWaitDuration < 0 {
		fields = append(fields, "MaxWaitDuration")
	}
	if cfg.MaxQueuedCalls < 0 || cfg.MaxWaitDuration > 0 && cfg.MaxQueuedCalls == 0 { // a wait needs a queue
		fields = append(fields, "MaxQueuedCalls")
	}
	if cfg.QueueOrder != bulkhead.FIFO && cfg.QueueOrder != bulkhead.LIFO {
		fields = append(fields, "QueueOrder")
	}
	err := cfg.Validate()
	if len(fields) == 0 {
		if err != nil {
			t.Fatalf("Validate(%v) = %v, want nil", cfg, err)
		}
	} else {
		// Every invalid field is reported, in field order; errors.As finds the first.
		var ce *bulkhead.ConfigError
		if !errors.As(err, &ce) || ce.Field != fields[0] || !errors.Is(err, bulkhead.ErrInvalidConfig) {
			t.Fatalf("Validate(%v) = %v, want a *ConfigError naming %s first", cfg, err, fields[0])
		}
		for _, field := range fields {
			if !strings.Contains(err.Error(), field) {
				t.Fatalf("Validate(%v) = %v, which does not name %s", cfg, err, field)
			}
		}
	}
	s, nerr := bulkhead.New("partner", cfg)
	if (nerr == nil) != (err == nil) {
		t.Fatalf("New(%v) = %v, Validate = %v", cfg, nerr, err)
	}
	if nerr != nil {
		if !strings.Contains(nerr.Error(), `bulkhead "partner"`) {
			t.Fatalf("New error %q does not name the bulkhead", nerr)
		}
		return
	}
	base := bulkhead.Config{MaxConcurrentCalls: 3, MaxWaitDuration: time.Second, MaxQueuedCalls: bulkhead.Unbounded}
	s2, _ := bulkhead.New("other", base)
	if cerr := s2.ChangeConfig(cfg); cerr != nil || s2.Config() != cfg {
		t.Fatalf("ChangeConfig(%v) = %v, config now %v", cfg, cerr, s2.Config())
	}
	if s.Config() != cfg || s.Metrics().AvailableConcurrentCalls != cfg.MaxConcurrentCalls {
		t.Fatalf("New(%v) made a bulkhead with config %v, metrics %+v", cfg, s.Config(), s.Metrics())
	}
}

func checkConfigFile(t *testing.T, doc string) {
	var f fileconfig.File
	if err := json.Unmarshal([]byte(doc), &f); err != nil {
		var fe *fileconfig.Error
		var syn *json.SyntaxError
		var ute *json.UnmarshalTypeError
		if !errors.As(err, &fe) && !errors.As(err, &syn) && !errors.As(err, &ute) && !strings.Contains(err.Error(), "bulkhead") {
			t.Fatalf("json.Unmarshal(%q): error %v is neither a JSON error nor a bulkhead one", doc, err)
		}
		if errors.As(err, &fe) {
			for _, e := range fileErrors(t, err) {
				if e.Problem == "" {
					t.Fatalf("json.Unmarshal(%q): %#v says nothing of what is wrong", doc, e)
				}
			}
		}
		return
	}
	// What decoded resolves: Decode has checked everything.
	res, rerr := f.Resolve()
	if rerr != nil {
		t.Fatalf("Resolve(%q) = %v after a successful decode", doc, rerr)
	}
	reg, nerr := fileconfig.NewRegistry(f)
	if nerr != nil {
		t.Fatalf("NewRegistry(%q) = %v, but Resolve succeeded", doc, nerr)
	}
	for name, e := range res.Configs {
		if err := e.Config.Validate(); err != nil {
			t.Fatalf("config %q resolved to an invalid %v: %v", name, e.Config, err)
		}
	}
	for name, e := range res.Instances {
		s, ok := reg.Find(name)
		if !ok {
			t.Fatalf("instance %q of %q was not created", name, doc)
		}
		if s.Config() != e.Config {
			t.Fatalf("instance %q has config %v, resolved %v", name, s.Config(), e.Config)
		}
	}
	if got, want := len(reg.All()), len(res.Instances); got != want {
		t.Fatalf("registry holds %d bulkheads, the file has %d instances", got, want)
	}
}

// FuzzRegistryConfigJSON decodes arbitrary JSON as a File: a decode either
// fails with errors that each say what is wrong, or yields a File that
// resolves to valid configurations and survives a round trip through
// json.Marshal.
func FuzzRegistryConfigJSON(f *testing.F) {
	f.Add(issueConfigJSON)
	f.Add(`{"configs": {"a": {"baseConfig": "b"}, "b": {"baseConfig": "a"}}}`)
	f.Add(`{"configs": {"default": {"shadowMode": true}}, "instances": {"a": {"shadowMode": false}, "b": {"shadowMode": "true"}}}`)
	f.Add(`{"configs": {"default": {"store": {"type": "redis", "unreachable": "fail-over", "localFraction": 0.25}}}, "instances": {"a": {"store": "local"}}}`)
	f.Add(`{"instances": {"x": {"max-wait-duration": "1h", "queueOrder": "lifo", "maxQueuedCalls": "3"}}}`)
	f.Add(`{"configs": {"default": {"baseConfig": "x"}, "x": {"maxConcurrentCalls": -1}}}`)
	f.Add(`{"instances": {"b": {"maxWaitDuration": "5 parsecs"}, "a": {"maxQueuedCalls": -1}, "c": {"maxQueuedCalls": "unbounded"}}}`)
	f.Add(`{"configs": {"e": {"adaptive": {"algorithm": "vegas", "min": 10}}}, "instances": {"w": {"baseConfig": "e", "adaptive": {"max": 5}}, "k": {"adaptive": {}}}}`)
	f.Add(`{"Configs":{"0":{"AdAptive":{"Algorithm":"vegAs"}}}}`) // issue 23: an algorithm is a func
	f.Add(`{"instances": {"a": {"min": 1}, "a": {}}, "instances": {"b": {"queueOrder": "lifo", "QueueOrder": "fifo"}}}`)
	f.Add(hubJSON)
	f.Add(`{"budgets": {"h": {"size": 3, "maxQueuedCalls": 2, "classes": [{"name": "a", "maxWaitDuration": "1s", "maxQueuedCalls": "unbounded"}, {"name": "b", "share": 4}], "groups": [{"name": "g", "lendable": 1}]}}}`)
	f.Add(`{"budgets": {"h": {"size": 1, "classes": [null, {"name": 3}, "x"], "groups": {}}, "": {"size": -1}}}`)
	f.Add(`{"budget": "h", "budgets": {"h": {"size": 4, "classes": [{"name": "a"}, {"name": "b"}], "groups": [{"name": "g", "nominal": 2}]}}, "configs": {"default": {"class": "a"}, "x": {"group": "g"}}, "instances": {"w": {"baseConfig": "x", "class": ""}, "v": {"group": ""}}}`)
	f.Add(`{"Budget": "h", "budget": 1, "configs": {"default": {"class": "zz", "Group": "g"}}, "instances": {"w": {"group": ["g"]}}}`)
	f.Fuzz(func(t *testing.T, doc string) {
		var file fileconfig.File
		if err := json.Unmarshal([]byte(doc), &file); err != nil {
			var fe *fileconfig.Error
			if errors.As(err, &fe) {
				for _, e := range fileErrors(t, err) {
					if e.Problem == "" {
						t.Fatalf("error without a problem: %#v", e)
					}
				}
			}
			return
		}
		res, err := file.Resolve()
		if err != nil {
			t.Fatalf("a decoded file does not resolve: %v", err)
		}
		if _, ok := res.Configs[bulkhead.DefaultConfigName]; !ok {
			t.Fatal("resolved configs lack the default")
		}
		for name, e := range res.Instances {
			if err := e.Config.Validate(); err != nil {
				t.Fatalf("instance %q resolved to an invalid config: %v", name, err)
			}
		}
		// Every budget that resolved is built with its resolved config.
		budgets, err := fileconfig.NewBudgets(file)
		if err != nil {
			t.Fatalf("NewBudgets: %v, but Resolve succeeded", err)
		}
		if got := budgets.Names(); len(got) != len(res.Budgets) {
			t.Fatalf("NewBudgets built %v, the file resolves %d budgets", got, len(res.Budgets))
		}
		for name, c := range res.Budgets {
			b, ok := budgets.Get(name)
			if !ok || !sameBudgetConfig(b.Config(), c) {
				t.Fatalf("budget %q: built with %+v, resolved %+v", name, b.Config(), c)
			}
		}
		// A file with a budget key builds its registry on its budgets, and
		// reloads into it (a redis store is refused before either).
		if !slices.ContainsFunc(slices.Collect(maps.Values(res.Instances)), func(e fileconfig.Entry) bool { return e.Store.Type == fileconfig.StoreRedis }) &&
			!slices.ContainsFunc(slices.Collect(maps.Values(res.Configs)), func(e fileconfig.Entry) bool { return e.Store.Type == fileconfig.StoreRedis }) {
			r, err := budgets.NewRegistry(file)
			if err != nil {
				t.Fatalf("Budgets.NewRegistry of the file the budgets were built from: %v", err)
			}
			if (r.Budget() != nil) != (res.Budget != "") {
				t.Fatalf("registry's budget %v, the file names %q", r.Budget(), res.Budget)
			}
			if err := fileconfig.Apply(r, file); err != nil {
				t.Fatalf("Apply of the file the registry was built from: %v", err)
			}
		}
		if err := budgets.Apply(file); err != nil {
			t.Fatalf("Apply of the file the budgets were built from: %v", err)
		}
		// What was accepted survives a round trip through json.Marshal.
		out, err := json.Marshal(file)
		if err != nil {
			t.Fatalf("json.Marshal: %v", err)
		}
		var back fileconfig.File
		if err := json.Unmarshal(out, &back); err != nil {
			t.Fatalf("re-decoding %s: %v", out, err)
		}
		res2, err := back.Resolve()
		if err != nil || !sameResolution(reflect.ValueOf(res), reflect.ValueOf(res2)) {
			t.Fatalf("round trip changed the resolution: %+v, %v; want %+v", res2, err, res)
		}
	})
}

// sameResolution is reflect.DeepEqual, except for funcs, which DeepEqual
// never finds equal unless both are nil: a resolved adaptive section holds
// adaptive.Config.Algorithm, a func made from the algorithm's name. Two
// funcs are the same here when both are nil, or both are non-nil with the
// same code (reflect.Value.Pointer: the constructor of one algorithm, not
// another's). Everything else is compared as DeepEqual does, unexported
// fields included.
func sameResolution(a, b reflect.Value) bool {
	if a.IsValid() != b.IsValid() {
		return false
	}
	if !a.IsValid() {
		return true
	}
	if a.Type() != b.Type() {
		return false
	}
	switch a.Kind() {
	case reflect.Func:
		return a.IsNil() == b.IsNil() && (a.IsNil() || a.Pointer() == b.Pointer())
	case reflect.Pointer, reflect.Interface:
		if a.IsNil() || b.IsNil() {
			return a.IsNil() == b.IsNil()
		}
		return sameResolution(a.Elem(), b.Elem())
	case reflect.Struct:
		for i := range a.NumField() {
			if !sameResolution(a.Field(i), b.Field(i)) {
				return false
			}
		}
		return true
	case reflect.Map:
		if a.IsNil() != b.IsNil() || a.Len() != b.Len() {
			return false
		}
		for _, k := range a.MapKeys() {
			if !sameResolution(a.MapIndex(k), b.MapIndex(k)) {
				return false
			}
		}
		return true
	case reflect.Slice:
		if a.IsNil() != b.IsNil() {
			return false
		}
		fallthrough
	case reflect.Array:
		if a.Len() != b.Len() {
			return false
		}
		for i := range a.Len() {
			if !sameResolution(a.Index(i), b.Index(i)) {
				return false
			}
		}
		return true
	}
	return a.Equal(b) // bool, numbers, strings, channels: comparable kinds
}

func TestSameResolutionComparesAlgorithmsButSeesEveryDifference(t *testing.T) {
	resolve := func(doc string) fileconfig.Resolved {
		t.Helper()
		var f fileconfig.File
		if err := json.Unmarshal([]byte(doc), &f); err != nil {
			t.Fatal(err)
		}
		res, err := f.Resolve()
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	vegas := resolve(`{"configs":{"0":{"AdAptive":{"Algorithm":"vegAs"}}}}`) // the input that broke DeepEqual
	// The same name with another algorithm's func is a difference too.
	swapped := resolve(`{"configs":{"0":{"adaptive":{"algorithm":"vegas"}}}}`)
	aimd, _ := adaptive.ByName("aimd")
	swapped.Configs["0"].Adaptive.Config.Algorithm = aimd
	if sameResolution(reflect.ValueOf(vegas), reflect.ValueOf(swapped)) {
		t.Error("sameResolution does not tell the vegas func from the aimd one")
	}
	for _, tc := range []struct {
		doc  string
		same bool
	}{
		{`{"configs":{"0":{"adaptive":{"algorithm":"vegas"}}}}`, true},
		{`{"configs":{"0":{"adaptive":{"algorithm":"aimd"}}}}`, false},
		{`{"configs":{"0":{"adaptive":{}}}}`, false},
		{`{"configs":{"0":{}}}`, false},
		{`{"configs":{"0":{"adaptive":{"algorithm":"vegas","min":2}}}}`, false},
		{`{"configs":{"1":{"adaptive":{"algorithm":"vegas"}}}}`, false},
		{`{"configs":{"0":{"adaptive":{"algorithm":"vegas"},"maxConcurrentCalls":3}}}`, false},
	} {
		other := resolve(tc.doc)
		if got := sameResolution(reflect.ValueOf(vegas), reflect.ValueOf(other)); got != tc.same {
			t.Errorf("sameResolution(vegas, %s) = %v, want %v", tc.doc, got, tc.same)
		}
	}
}

// sameBudgetConfig compares two budget configurations, a nil list equal to
// an empty one.
func sameBudgetConfig(a, b bulkhead.BudgetConfig) bool {
	return a.Size == b.Size && a.MaxQueuedCalls == b.MaxQueuedCalls && a.MaxBypass == b.MaxBypass && a.DefaultClass == b.DefaultClass &&
		slices.Equal(a.Classes, b.Classes) && slices.Equal(a.Groups, b.Groups)
}
