package fileconfig_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/fileconfig"
)

// The same table runs through the YAML libraries in contrib/yamltest
// (TestAKeyGivenTwiceIsRefusedInEveryFormat).
func TestJSONRefusesAKeyGivenTwice(t *testing.T) {
	for _, tc := range []struct {
		name, doc string
		want      fileconfig.Error // Kind, Name, Key and the start of Problem
	}{
		{"setting of an entry", `{"instances": {"walmart": {"maxQueuedCalls": 1, "maxQueuedCalls": 2}}}`,
			fileconfig.Error{Kind: "instance", Name: "walmart", Key: "maxQueuedCalls", Problem: "given twice"}},
		{"setting of an entry, another case", `{"instances": {"walmart": {"maxQueuedCalls": 1, "MaxQueuedCalls": 2}}}`,
			fileconfig.Error{Kind: "instance", Name: "walmart", Key: "maxQueuedCalls", Problem: "given twice"}},
		{"subkey of a setting", `{"configs": {"big": {"adaptive": {"min": 1, "min": 2}}}}`,
			fileconfig.Error{Kind: "config", Name: "big", Key: "adaptive.min", Problem: "given twice"}},
		{"subkey of a setting, another case", `{"configs": {"big": {"adaptive": {"min": 1, "MIN": 2}}}}`,
			fileconfig.Error{Kind: "config", Name: "big", Key: "adaptive.min", Problem: "given twice"}},
		{"instance name", `{"instances": {"walmart": {"maxQueuedCalls": 1}, "walmart": {"maxQueuedCalls": 2}}}`,
			fileconfig.Error{Kind: "instance", Name: "walmart", Problem: "given twice"}},
		{"config name", `{"configs": {"big": {}, "big": {"maxConcurrentCalls": 3}}}`,
			fileconfig.Error{Kind: "config", Name: "big", Problem: "given twice"}},
		{"section", `{"instances": {"a": {}}, "instances": {"b": {}}}`,
			fileconfig.Error{Key: "instances", Problem: "given twice"}},
		{"section, another case", `{"instances": {"a": {}}, "Instances": {"b": {}}}`,
			fileconfig.Error{Key: "instances", Problem: "given twice"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var f fileconfig.File
			err := json.Unmarshal([]byte(tc.doc), &f)
			if !errors.Is(err, bulkhead.ErrInvalidConfig) {
				t.Fatalf("json.Unmarshal(%s) = %v, want an invalid-config error", tc.doc, err)
			}
			var fe *fileconfig.Error
			if !errors.As(err, &fe) || fe.Kind != tc.want.Kind || fe.Name != tc.want.Name ||
				!strings.EqualFold(fe.Key, tc.want.Key) || !strings.HasPrefix(fe.Problem, tc.want.Problem) {
				t.Fatalf("json.Unmarshal(%s) = %#v, want %#v", tc.doc, fe, tc.want)
			}
			if f.Configs != nil || f.Instances != nil {
				t.Fatalf("a refused file was decoded: %+v", f)
			}
		})
	}
}

func TestJSONNamesThatDifferInCaseAreTwoEntries(t *testing.T) {
	// Names are matched exactly (docs/configuration.md): "Walmart" and
	// "walmart" are two partners, in JSON as in YAML.
	var f fileconfig.File
	if err := json.Unmarshal([]byte(`{"instances": {"walmart": {"maxConcurrentCalls": 1}, "Walmart": {"maxConcurrentCalls": 2}}}`), &f); err != nil {
		t.Fatal(err)
	}
	if len(f.Instances) != 2 || *f.Instances["walmart"].MaxConcurrentCalls != 1 || *f.Instances["Walmart"].MaxConcurrentCalls != 2 {
		t.Fatalf("instances %+v, want walmart (1) and Walmart (2)", f.Instances)
	}
}

func TestJSONKeyGivenTwiceIsReportedWithTheFilesOtherProblems(t *testing.T) {
	var f fileconfig.File
	err := json.Unmarshal([]byte(`{"instances": {"a": {"maxQueuedCalls": -1}, "b": {"queueOrder": "lifo", "queueOrder": "fifo"}}}`), &f)
	want := "bulkhead \"a\": maxQueuedCalls -1: must be >= 0\nbulkhead \"b\": queueOrder: given twice"
	if err == nil || err.Error() != want {
		t.Fatalf("got %v, want\n%s", err, want)
	}
}

func TestJSONTrailingDataIsRefused(t *testing.T) {
	var f fileconfig.File
	if err := f.UnmarshalJSON([]byte(`{"instances": {}} {"instances": {"a": {}}}`)); err == nil || !strings.Contains(err.Error(), "after the JSON document") {
		t.Fatalf("UnmarshalJSON of two documents = %v, want an error", err)
	}
}
