package fileconfig_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/fileconfig"
)

func TestBadValuesNameTheEntryTheKeyAndTheValue(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		want string // the whole message
	}{
		{"duration without unit", `{"instances": {"walmart": {"maxWaitDuration": 50}}}`,
			`bulkhead "walmart": maxWaitDuration 50: not a duration: want a number with a unit, such as "50ms" or "0s"`},
		{"duration text", `{"instances": {"walmart": {"maxWaitDuration": "5 parsecs"}}}`,
			`bulkhead "walmart": maxWaitDuration "5 parsecs": not a duration: want a number with a unit, such as "50ms" or "0s"`},
		{"negative duration", `{"configs": {"slow": {"maxWaitDuration": "-5s"}}}`,
			`bulkhead config "slow": maxWaitDuration -5s: must be >= 0`},
		{"zero calls", `{"instances": {"walmart": {"maxConcurrentCalls": 0}}}`,
			`bulkhead "walmart": maxConcurrentCalls 0: must be >= 1`},
		{"negative queue", `{"instances": {"carrefour": {"maxQueuedCalls": -1}}}`,
			`bulkhead "carrefour": maxQueuedCalls -1: must be >= 0`},
		{"string for integer", `{"instances": {"walmart": {"maxConcurrentCalls": "twenty"}}}`,
			`bulkhead "walmart": maxConcurrentCalls "twenty": want an integer or "unbounded", got a string`},
		{"fraction for integer", `{"instances": {"walmart": {"maxConcurrentCalls": 2.5}}}`,
			`bulkhead "walmart": maxConcurrentCalls 2.5: want an integer or "unbounded", got a number`},
		{"queue order", `{"instances": {"walmart": {"queueOrder": "random"}}}`,
			`bulkhead "walmart": queueOrder "random": not a queue order: want FIFO or LIFO`},
		{"shadow mode not a boolean", `{"instances": {"walmart": {"shadowMode": "yes"}}}`,
			`bulkhead "walmart": shadowMode "yes": want true or false, got a string`},
		{"base config type", `{"instances": {"walmart": {"baseConfig": 3}}}`,
			`bulkhead "walmart": baseConfig 3: want the name of a config, got a number`},
		{"unknown key", `{"instances": {"walmart": {"maxConcurentCalls": 3}}}`,
			`bulkhead "walmart": maxConcurentCalls: unknown key (known: adaptive, baseConfig, class, group, maxConcurrentCalls, maxQueuedCalls, maxWaitDuration, queueOrder, shadowMode, store)`},
		{"resilience4j key", `{"configs": {"default": {"writableStackTraceEnabled": true}}}`,
			`bulkhead config "default": writableStackTraceEnabled: resilience4j setting with no equivalent here: errors carry no stack trace; remove it`},
		{"key twice", `{"instances": {"walmart": {"maxQueuedCalls": 1, "max-queued-calls": 2}}}`,
			`bulkhead "walmart": maxQueuedCalls: given twice (also as "max-queued-calls")`},
		{"entry not a mapping", `{"instances": {"walmart": 20}}`,
			`bulkhead "walmart": want a mapping of settings, got a number`},
		{"section not a mapping", `{"instances": ["walmart"]}`,
			`bulkhead config: instances: want a mapping from names to settings, got a list`},
		{"unknown top-level key", `{"bulkheads": {}}`,
			`bulkhead config: bulkheads: unknown key (known: budget, budgets, configs, instances)`},
		{"document not a mapping", `[1]`,
			`bulkhead config: want a mapping with the keys configs, instances, budgets and budget, got a list`},
		{"unknown base", `{"configs": {"big": {}}, "instances": {"walmart": {"baseConfig": "huge"}}}`,
			`bulkhead "walmart": baseConfig "huge": no such config (known: big)`},
		{"unknown base, no configs", `{"instances": {"walmart": {"baseConfig": "huge"}}}`,
			`bulkhead "walmart": baseConfig "huge": no such config (known: none)`},
		{"self cycle", `{"configs": {"a": {"baseConfig": "a"}}}`,
			`bulkhead config "a": baseConfig "a": inheritance cycle a -> a`},
		{"two-step cycle", `{"configs": {"a": {"baseConfig": "b"}, "b": {"baseConfig": "a"}}, "instances": {"x": {"baseConfig": "a"}}}`,
			`bulkhead config "b": baseConfig "a": inheritance cycle a -> b -> a`},
		{"cycle through default", `{"configs": {"default": {"baseConfig": "big"}, "big": {}}}`,
			`bulkhead config "default": baseConfig "big": inheritance cycle big -> default -> big (an entry without baseConfig inherits "default")`},
		{"cycle closed by an implicit base", `{"configs": {"default": {"baseConfig": "x"}, "x": {"baseConfig": "y"}, "y": {}}}`,
			`bulkhead config "y": inheritance cycle default -> x -> y -> default (an entry without baseConfig inherits "default")`},
		{"empty name", `{"instances": {"": {}}}`,
			`bulkhead "": the name must not be empty`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var f fileconfig.File
			err := json.Unmarshal([]byte(tt.doc), &f)
			errs := fileErrors(t, err)
			if len(errs) != 1 {
				t.Fatalf("got %d errors, want 1: %v", len(errs), err)
			}
			if got := errs[0].Error(); got != tt.want {
				t.Fatalf("error:\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}

// The case of issue 14: a bad duration in partner b and -1 in partner a
// used to report b only, because decoding stopped before the rules were
// checked.
func TestEveryProblemOfAFileIsReportedAtOnce(t *testing.T) {
	var f fileconfig.File
	err := json.Unmarshal([]byte(`{"instances": {
		"b": {"maxWaitDuration": "5 parsecs", "maxConcurrentCalls": 0},
		"a": {"maxQueuedCalls": -1, "baseConfig": 3}}}`), &f)
	errs := fileErrors(t, err)
	var got []string
	for _, e := range errs {
		got = append(got, e.Error())
	}
	want := []string{
		`bulkhead "a": baseConfig 3: want the name of a config, got a number`,
		`bulkhead "a": maxQueuedCalls -1: must be >= 0`,
		`bulkhead "b": maxConcurrentCalls 0: must be >= 1`,
		`bulkhead "b": maxWaitDuration "5 parsecs": not a duration: want a number with a unit, such as "50ms" or "0s"`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("errors:\n got %q\nwant %q", got, want)
	}
	if err.Error() != strings.Join(want, "\n") {
		t.Errorf("message %q, want the four lines", err)
	}
	if !reflect.DeepEqual(f, fileconfig.File{}) {
		t.Fatalf("a failed decode changed the file: %+v", f)
	}
}

func TestEveryProblemIsReportedInFileOrder(t *testing.T) {
	var f fileconfig.File
	err := json.Unmarshal([]byte(`{"Instances": {"b": {"maxQueuedCalls": "x"}, "a": {"queueOrder": 1, "maxConcurrentCalls": []}},
		"configs": {"z": {"bogus": 1}}, "extra": 1}`), &f)
	got := where(fileErrors(t, err))
	want := []string{"  extra", "config z bogus", "instance a maxConcurrentCalls", "instance a queueOrder", "instance b maxQueuedCalls"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("errors in order %q, want %q", got, want)
	}
}

func TestDurationText(t *testing.T) {
	for text, want := range map[string]time.Duration{"50ms": 50 * time.Millisecond, "0s": 0, "0": 0, "1m30s": 90 * time.Second, "1.5s": 1500 * time.Millisecond} {
		var d fileconfig.Duration
		if err := d.UnmarshalText([]byte(text)); err != nil || time.Duration(d) != want {
			t.Errorf("UnmarshalText(%q) = %v, %v; want %v", text, time.Duration(d), err, want)
		}
		out, _ := d.MarshalText()
		var back fileconfig.Duration
		if err := back.UnmarshalText(out); err != nil || back != d {
			t.Errorf("round trip of %q through %q = %v, %v", text, out, back, err)
		}
	}
	for _, text := range []string{"50", "", "fast", "5 parsecs"} {
		d := fileconfig.Duration(time.Second)
		err := d.UnmarshalText([]byte(text))
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("%q", text)) {
			t.Errorf("UnmarshalText(%q) = %v, want an error quoting the text", text, err)
		}
		if d != fileconfig.Duration(time.Second) {
			t.Errorf("UnmarshalText(%q) changed the value to %v", text, d)
		}
	}
}

func TestJSONRoundTripKeepsTheFile(t *testing.T) {
	f := decodeJSON(t, `{"configs": {"default": {"maxWaitDuration": "1m30s", "queueOrder": "LIFO"}},
		"instances": {"walmart": {"baseConfig": "default", "maxConcurrentCalls": 3, "maxQueuedCalls": "unbounded"}}}`)
	out, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), `"maxWaitDuration":"1m30s"`) || !strings.Contains(string(out), `"queueOrder":"LIFO"`) {
		t.Errorf("json.Marshal = %s, want durations and queue orders as text", out)
	}
	back := decodeJSON(t, string(out))
	if !reflect.DeepEqual(back, f) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", back, f)
	}
}

func TestJSONNullLeavesTheFileUnchanged(t *testing.T) {
	f := decodeJSON(t, issueConfigJSON)
	if err := json.Unmarshal([]byte(`null`), &f); err != nil {
		t.Fatal(err)
	}
	if len(f.Instances) != 2 {
		t.Fatalf("null replaced the file: %+v", f)
	}
}

func TestDecodeAcceptsGenericTrees(t *testing.T) {
	// The shape a YAML v2 decoder or viper produces: map[any]any, native ints,
	// a numeric instance name.
	tree := map[any]any{
		"instances": map[any]any{
			123:       map[any]any{"maxConcurrentCalls": uint64(4), "maxWaitDuration": "2s"},
			"carrier": map[string]any{"maxQueuedCalls": int64(5), "maxWaitDuration": 0.0},
		},
	}
	f, err := fileconfig.Decode(tree)
	if err != nil {
		t.Fatal(err)
	}
	res, err := f.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := res.Instances["123"].Config, defaults(func(c *bulkhead.Config) { c.MaxConcurrentCalls, c.MaxWaitDuration = 4, 2*time.Second }); got != want {
		t.Errorf("123 = %v, want %v", got, want)
	}
	if got, want := res.Instances["carrier"].Config, (bulkhead.Config{MaxConcurrentCalls: 25, MaxQueuedCalls: 5}); got != want {
		t.Errorf("carrier = %v, want %v", got, want)
	}
	if _, err := fileconfig.Decode(map[string]any{"instances": map[string]any{"x": map[string]any{"maxQueuedCalls": uint64(1) << 63}}}); err == nil {
		t.Error("an integer above MaxInt was accepted")
	}
}

func TestJSONIntegersWrittenAsFloatsAreIntegersAsInYAML(t *testing.T) {
	// A YAML decoder gives float64 for 2.0 and 1e2; encoding/json gives a
	// json.Number with that text. Both must read them as the integers they
	// are (contrib/yamltest, TestJSONAndYAMLDecodeAlike, runs both).
	f := decodeJSON(t, `{"instances": {"a": {"maxConcurrentCalls": 2.0, "maxQueuedCalls": 1e2, "maxWaitDuration": 0.0}}}`)
	a := f.Instances["a"]
	if *a.MaxConcurrentCalls != 2 || *a.MaxQueuedCalls != 100 || *a.MaxWaitDuration != 0 {
		t.Fatalf("decoded %d, %d, %v; want 2, 100, 0s", *a.MaxConcurrentCalls, *a.MaxQueuedCalls, *a.MaxWaitDuration)
	}
	for _, doc := range []string{
		`{"instances": {"a": {"maxConcurrentCalls": 2.5}}}`,
		`{"instances": {"a": {"maxQueuedCalls": 1e20}}}`,
		`{"instances": {"a": {"maxConcurrentCalls": "2.0"}}}`, // a string must be a decimal integer
	} {
		var f fileconfig.File
		if err := json.Unmarshal([]byte(doc), &f); err == nil || !strings.Contains(err.Error(), "want an integer") {
			t.Errorf("%s: %v, want an error", doc, err)
		}
	}
}
