package yamltest_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/rxbulkhead/bulkhead/fileconfig"
)

// outcome is what decoding a document gave, in terms that do not depend on
// the format: the File, or where each problem is and what it says (the
// value is left out: a decoder's number types differ).
func outcome(f fileconfig.File, err error) string {
	if err == nil {
		return fmt.Sprintf("ok %+v", describeFile(f))
	}
	var lines []string
	for _, e := range unjoin(err) {
		var fe *fileconfig.Error
		if !errors.As(e, &fe) {
			return "not a *fileconfig.Error: " + e.Error()
		}
		lines = append(lines, fmt.Sprintf("%s %q %s: %s", fe.Kind, fe.Name, fe.Key, fe.Problem))
	}
	return strings.Join(lines, "\n")
}

func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// describeFile prints a File with its pointers followed, so that two Files
// that decode alike print alike.
func describeFile(f fileconfig.File) string {
	var b strings.Builder
	for _, sec := range []struct {
		name string
		m    map[string]fileconfig.Spec
	}{{"configs", f.Configs}, {"instances", f.Instances}} {
		if sec.m == nil {
			fmt.Fprintf(&b, "%s:nil ", sec.name)
			continue
		}
		fmt.Fprintf(&b, "%s:{", sec.name)
		for _, name := range sortedKeys(sec.m) {
			spec, err := json.Marshal(sec.m[name])
			if err != nil {
				spec = []byte(err.Error())
			}
			fmt.Fprintf(&b, "%s:%s ", name, spec)
		}
		b.WriteString("} ")
	}
	return b.String()
}

func sortedKeys(m map[string]fileconfig.Spec) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	for i := range keys {
		for j := i + 1; j < len(keys); j++ {
			if keys[j] < keys[i] {
				keys[i], keys[j] = keys[j], keys[i]
			}
		}
	}
	return keys
}

// TestJSONAndYAMLDecodeAlike writes the same document in JSON and in YAML
// and requires the same File or the same problems from encoding/json and
// every YAML library: value types (integers written as floats, exponents,
// strings, booleans), null and empty sections, entries and keys, key
// spelling, unknown keys and durations.
func TestJSONAndYAMLDecodeAlike(t *testing.T) {
	for _, tc := range []struct{ name, json, yaml string }{
		{"integer written with a fraction of zero", `{"instances": {"a": {"maxConcurrentCalls": 2.0}}}`, "instances:\n  a: { maxConcurrentCalls: 2.0 }\n"},
		{"integer written with an exponent", `{"instances": {"a": {"maxQueuedCalls": 1e2}}}`, "instances:\n  a: { maxQueuedCalls: 1e2 }\n"},
		{"fraction", `{"instances": {"a": {"maxConcurrentCalls": 2.5}}}`, "instances:\n  a: { maxConcurrentCalls: 2.5 }\n"},
		{"integer too large", `{"instances": {"a": {"maxQueuedCalls": 9223372036854775808}}}`, "instances:\n  a: { maxQueuedCalls: 9223372036854775808 }\n"},
		{"float too large", `{"instances": {"a": {"maxQueuedCalls": 1e20}}}`, "instances:\n  a: { maxQueuedCalls: 1e20 }\n"},
		{"negative zero", `{"instances": {"a": {"maxQueuedCalls": -0}}}`, "instances:\n  a: { maxQueuedCalls: -0 }\n"},
		{"integer as a string", `{"instances": {"a": {"maxConcurrentCalls": "20"}}}`, "instances:\n  a: { maxConcurrentCalls: \"20\" }\n"},
		{"fraction as a string", `{"instances": {"a": {"maxConcurrentCalls": "2.0"}}}`, "instances:\n  a: { maxConcurrentCalls: \"2.0\" }\n"},
		{"boolean for a count", `{"instances": {"a": {"maxConcurrentCalls": true}}}`, "instances:\n  a: { maxConcurrentCalls: true }\n"},
		{"list for a count", `{"instances": {"a": {"maxConcurrentCalls": [1]}}}`, "instances:\n  a: { maxConcurrentCalls: [1] }\n"},
		{"unbounded in capitals", `{"instances": {"a": {"maxQueuedCalls": "UNBOUNDED"}}}`, "instances:\n  a: { maxQueuedCalls: UNBOUNDED }\n"},
		{"duration", `{"instances": {"a": {"maxWaitDuration": "1m30s", "maxQueuedCalls": 1}}}`, "instances:\n  a: { maxWaitDuration: 1m30s, maxQueuedCalls: 1 }\n"},
		{"duration zero as a number", `{"instances": {"a": {"maxWaitDuration": 0}}}`, "instances:\n  a: { maxWaitDuration: 0 }\n"},
		{"duration zero as a float", `{"instances": {"a": {"maxWaitDuration": 0.0}}}`, "instances:\n  a: { maxWaitDuration: 0.0 }\n"},
		{"duration zero as a string", `{"instances": {"a": {"maxWaitDuration": "0"}}}`, "instances:\n  a: { maxWaitDuration: \"0\" }\n"},
		{"duration without unit", `{"instances": {"a": {"maxWaitDuration": 50}}}`, "instances:\n  a: { maxWaitDuration: 50 }\n"},
		{"negative duration", `{"instances": {"a": {"maxWaitDuration": "-1s"}}}`, "instances:\n  a: { maxWaitDuration: -1s }\n"},
		{"duration as a boolean", `{"instances": {"a": {"maxWaitDuration": false}}}`, "instances:\n  a: { maxWaitDuration: false }\n"},
		{"queue order in lower case", `{"instances": {"a": {"queueOrder": "lifo"}}}`, "instances:\n  a: { queueOrder: lifo }\n"},
		{"queue order as a number", `{"instances": {"a": {"queueOrder": 1}}}`, "instances:\n  a: { queueOrder: 1 }\n"},
		{"null section", `{"instances": null}`, "instances:\n"},
		{"empty section", `{"instances": {}}`, "instances: {}\n"},
		{"null entry", `{"instances": {"a": null}}`, "instances:\n  a:\n"},
		{"empty entry", `{"instances": {"a": {}}}`, "instances:\n  a: {}\n"},
		{"null key", `{"instances": {"a": {"maxQueuedCalls": null}}}`, "instances:\n  a: { maxQueuedCalls: ~ }\n"},
		{"empty file", `{}`, "{}\n"},
		{"section not a mapping", `{"configs": "big"}`, "configs: big\n"},
		{"entry not a mapping", `{"configs": {"big": 3}}`, "configs:\n  big: 3\n"},
		{"keys spelt any way", `{"CONFIGS": {"big": {"max-concurrent-calls": 3, "Max_Queued_Calls": 0}}}`, "CONFIGS:\n  big: { max-concurrent-calls: 3, Max_Queued_Calls: 0 }\n"},
		{"unknown key", `{"instances": {"a": {"maxConcurentCalls": 3}}}`, "instances:\n  a: { maxConcurentCalls: 3 }\n"},
		{"unknown top-level key", `{"bulkheads": {}}`, "bulkheads: {}\n"},
		{"resilience4j key", `{"configs": {"default": {"eventConsumerBufferSize": 10}}}`, "configs:\n  default: { eventConsumerBufferSize: 10 }\n"},
		{"store as text and as a mapping", `{"configs": {"default": {"store": {"type": "redis", "unreachable": "fail-over", "localFraction": 1}}}, "instances": {"a": {"store": "local"}}}`,
			"configs:\n  default: { store: { type: redis, unreachable: fail-over, localFraction: 1 } }\ninstances:\n  a: { store: local }\n"},
		{"store fraction as a string", `{"configs": {"default": {"store": {"type": "redis", "unreachable": "fail-over", "localFraction": "0.5"}}}}`,
			"configs:\n  default: { store: { type: redis, unreachable: fail-over, localFraction: \"0.5\" } }\n"},
		{"adaptive subkeys", `{"configs": {"big": {"adaptive": {"Algorithm": "AIMD", "min": 2.0, "max": "9"}}}}`, "configs:\n  big: { adaptive: { Algorithm: AIMD, min: 2.0, max: \"9\" } }\n"},
		{"adaptive null", `{"configs": {"big": {"adaptive": null}}}`, "configs:\n  big: { adaptive: ~ }\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var jf fileconfig.File
			want := outcome(jf, json.Unmarshal([]byte(tc.json), &jf))
			for lib, y := range libraries {
				var yf fileconfig.File
				err := y.unmarshal([]byte(tc.yaml), &yf)
				if got := outcome(yf, err); got != want {
					t.Errorf("%s decodes\n%s as\n  %s\nencoding/json decodes\n%s as\n  %s", lib, tc.yaml, got, tc.json, want)
				}
			}
		})
	}
}
