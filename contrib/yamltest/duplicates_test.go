package yamltest_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/fileconfig"
)

// TestAKeyGivenTwiceIsRefusedInEveryFormat runs one table through JSON and
// every YAML library: a section, a config or instance name, a setting or a
// subkey given twice is refused, naming it. Keys that are the same ignoring
// case, "-" and "_" are refused by fileconfig with an *fileconfig.Error in
// every format; exact duplicates are refused by fileconfig in JSON (an
// *Error) and by the YAML library itself in YAML (its error names the key
// and both lines).
func TestAKeyGivenTwiceIsRefusedInEveryFormat(t *testing.T) {
	for _, tc := range []struct {
		name       string
		json, yaml string
		named      string // what the error must name
		exact      bool   // an exact duplicate: a YAML library's own error
	}{
		{"setting", `{"instances": {"walmart": {"maxQueuedCalls": 1, "maxQueuedCalls": 2}}}`,
			"instances:\n  walmart: { maxQueuedCalls: 1, maxQueuedCalls: 2 }\n", "maxQueuedCalls", true},
		{"setting spelt another way", `{"instances": {"walmart": {"maxQueuedCalls": 1, "Max_Queued_Calls": 2}}}`,
			"instances:\n  walmart: { maxQueuedCalls: 1, Max_Queued_Calls: 2 }\n", "Max_Queued_Calls", false},
		{"subkey", `{"configs": {"big": {"adaptive": {"min": 1, "min": 2}}}}`,
			"configs:\n  big: { adaptive: { min: 1, min: 2 } }\n", "min", true},
		{"subkey in another case", `{"configs": {"big": {"adaptive": {"min": 1, "MIN": 2}}}}`,
			"configs:\n  big: { adaptive: { min: 1, MIN: 2 } }\n", "MIN", false},
		{"instance name", `{"instances": {"walmart": {}, "walmart": {"maxQueuedCalls": 2}}}`,
			"instances:\n  walmart: {}\n  walmart: { maxQueuedCalls: 2 }\n", "walmart", true},
		{"config name", `{"configs": {"big": {}, "big": {}}}`,
			"configs:\n  big: {}\n  big: {}\n", "big", true},
		{"section", `{"instances": {"a": {}}, "instances": {"b": {}}}`,
			"instances:\n  a: {}\ninstances:\n  b: {}\n", "instances", true},
		{"section in another case", `{"instances": {"a": {}}, "INSTANCES": {"b": {}}}`,
			"instances:\n  a: {}\nINSTANCES:\n  b: {}\n", "INSTANCES", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			decoders := map[string]func() error{
				"encoding/json": func() error { var f fileconfig.File; return json.Unmarshal([]byte(tc.json), &f) },
			}
			for lib, y := range libraries {
				decoders[lib] = func() error { var f fileconfig.File; return y.unmarshal([]byte(tc.yaml), &f) }
			}
			for format, decode := range decoders {
				err := decode()
				if err == nil || !strings.Contains(err.Error(), tc.named) {
					t.Errorf("%s: %v, want an error naming %q", format, err, tc.named)
					continue
				}
				if !tc.exact || format == "encoding/json" {
					var fe *fileconfig.Error
					if !errors.As(err, &fe) || !errors.Is(err, bulkhead.ErrInvalidConfig) || !strings.HasPrefix(fe.Problem, "given twice") {
						t.Errorf("%s: %v, want a *fileconfig.Error saying it is given twice", format, err)
					}
				}
			}
		})
	}
}

// TestNamesThatDifferInCaseAreTwoEntriesInEveryFormat: names are matched
// exactly, so "Walmart" and "walmart" are two partners, whatever the format.
func TestNamesThatDifferInCaseAreTwoEntriesInEveryFormat(t *testing.T) {
	files := map[string]*fileconfig.File{"encoding/json": {}}
	if err := json.Unmarshal([]byte(`{"instances": {"walmart": {"maxConcurrentCalls": 1}, "Walmart": {"maxConcurrentCalls": 2}}}`), files["encoding/json"]); err != nil {
		t.Fatal(err)
	}
	for lib, y := range libraries {
		files[lib] = &fileconfig.File{}
		if err := y.unmarshal([]byte("instances:\n  walmart: { maxConcurrentCalls: 1 }\n  Walmart: { maxConcurrentCalls: 2 }\n"), files[lib]); err != nil {
			t.Fatalf("%s: %v", lib, err)
		}
	}
	for format, f := range files {
		if len(f.Instances) != 2 || *f.Instances["walmart"].MaxConcurrentCalls != 1 || *f.Instances["Walmart"].MaxConcurrentCalls != 2 {
			t.Errorf("%s: instances %+v, want walmart (1) and Walmart (2)", format, f.Instances)
		}
	}
}
