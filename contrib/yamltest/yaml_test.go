package yamltest_test

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	yamlv3 "go.yaml.in/yaml/v3"
	gopkgyaml "gopkg.in/yaml.v3"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/fileconfig"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// libraries are the YAML decoders under test, by name.
var libraries = map[string]struct {
	unmarshal func([]byte, any) error
	marshal   func(any) ([]byte, error)
}{
	"go.yaml.in/yaml/v3": {yamlv3.Unmarshal, yamlv3.Marshal},
	"gopkg.in/yaml.v3":   {gopkgyaml.Unmarshal, gopkgyaml.Marshal},
}

// issueConfig is the example of issue 9, as written there.
const issueConfig = `
configs:
  default: { maxConcurrentCalls: 20, maxWaitDuration: 50ms, maxQueuedCalls: 100 }
  big:     { baseConfig: default, maxConcurrentCalls: 60 }
instances:
  walmart:  { baseConfig: big }
  carrefour: { maxWaitDuration: 0s }
`

func TestIssueExampleDecodesAndResolves(t *testing.T) {
	for lib, y := range libraries {
		t.Run(lib, func(t *testing.T) {
			var f fileconfig.File
			if err := y.unmarshal([]byte(issueConfig), &f); err != nil {
				t.Fatal(err)
			}
			res, err := f.Resolve()
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]fileconfig.Entry{
				"walmart":   {Config: bulkhead.Config{MaxConcurrentCalls: 60, MaxWaitDuration: 50 * time.Millisecond, MaxQueuedCalls: 100}},
				"carrefour": {Config: bulkhead.Config{MaxConcurrentCalls: 20, MaxQueuedCalls: 100}},
			}
			if !reflect.DeepEqual(res.Instances, want) {
				t.Fatalf("instances %+v, want %+v", res.Instances, want)
			}
		})
	}
}

func TestYAMLErrorsNameTheInstanceTheKeyAndTheValue(t *testing.T) {
	docs := map[string]string{
		"instances:\n  walmart: { maxWaitDuration: 5 parsecs }\n": `bulkhead "walmart": maxWaitDuration "5 parsecs": not a duration`,
		"instances:\n  walmart: { maxWaitDuration: 50 }\n":        `bulkhead "walmart": maxWaitDuration 50: not a duration`,
		"instances:\n  walmart: { maxConcurentCalls: 3 }\n":       `bulkhead "walmart": maxConcurentCalls: unknown key`,
		"configs:\n  big: { maxConcurrentCalls: many }\n":         `bulkhead config "big": maxConcurrentCalls "many": want an integer or "unbounded", got a string`,
		"configs:\n  big: { queueOrder: [FIFO] }\n":               `bulkhead config "big": queueOrder [FIFO]: not a queue order`,
	}
	for lib, y := range libraries {
		for doc, want := range docs {
			var f fileconfig.File
			err := y.unmarshal([]byte(doc), &f)
			if err == nil || !strings.HasPrefix(err.Error(), want) || !errors.Is(err, bulkhead.ErrInvalidConfig) {
				t.Errorf("%s: decoding %q: %v; want an invalid-config error starting %q", lib, doc, err, want)
			}
		}
	}
}

func TestConfigEmbeddedInAnApplicationConfig(t *testing.T) {
	type appConfig struct {
		Listen    string          `yaml:"listen"`
		Bulkheads fileconfig.File `yaml:"bulkheads"`
	}
	doc := "listen: :8080\nbulkheads:\n  instances:\n    \"123\": { max-concurrent-calls: 4, queue-order: lifo }\n    456: {}\n"
	for lib, y := range libraries {
		var app appConfig
		if err := y.unmarshal([]byte(doc), &app); err != nil {
			t.Fatalf("%s: %v", lib, err)
		}
		res, err := app.Bulkheads.Resolve()
		if err != nil {
			t.Fatalf("%s: %v", lib, err)
		}
		if got := res.Instances["123"].Config; got.MaxConcurrentCalls != 4 || got.QueueOrder != bulkhead.LIFO {
			t.Errorf("%s: instance 123 = %+v", lib, got)
		}
		if _, ok := res.Instances["456"]; !ok {
			t.Errorf("%s: the numeric instance name 456 was lost: %v", lib, res.Instances)
		}
	}
}

// TestStructTagsAndTextUnmarshalers decodes a fileconfig.Spec alone: it has no
// YAML hook, so the library goes through the struct tags and the
// TextUnmarshaler of Duration and QueueOrder.
func TestStructTagsAndTextUnmarshalers(t *testing.T) {
	for lib, y := range libraries {
		var spec fileconfig.Spec
		doc := "baseConfig: big\nmaxConcurrentCalls: 3\nmaxWaitDuration: 1m30s\nmaxQueuedCalls: 0\nqueueOrder: LIFO\n"
		if err := y.unmarshal([]byte(doc), &spec); err != nil {
			t.Fatalf("%s: %v", lib, err)
		}
		got := spec.BaseConfig + " " + strings.Join([]string{
			strconv.Itoa(*spec.MaxConcurrentCalls), spec.MaxWaitDuration.String(), strconv.Itoa(*spec.MaxQueuedCalls), spec.QueueOrder.String(),
		}, " ")
		if want := "big 3 1m30s 0 LIFO"; got != want {
			t.Errorf("%s: decoded %q, want %q", lib, got, want)
		}
		err := y.unmarshal([]byte("maxWaitDuration: soon\n"), &spec)
		if err == nil || !strings.Contains(err.Error(), `"soon"`) {
			t.Errorf("%s: a bad duration gave %v, want an error quoting it", lib, err)
		}
	}
}

func TestMarshalRoundTrip(t *testing.T) {
	for lib, y := range libraries {
		var f fileconfig.File
		if err := y.unmarshal([]byte(issueConfig), &f); err != nil {
			t.Fatal(err)
		}
		out, err := y.marshal(f)
		if err != nil {
			t.Fatalf("%s: marshal: %v", lib, err)
		}
		if !strings.Contains(string(out), "maxWaitDuration: 50ms") {
			t.Errorf("%s: marshalled durations are not text:\n%s", lib, out)
		}
		var back fileconfig.File
		if err := y.unmarshal(out, &back); err != nil {
			t.Fatalf("%s: re-decoding:\n%s\n%v", lib, out, err)
		}
		if !reflect.DeepEqual(back, f) {
			t.Errorf("%s: round trip changed the config:\n got %+v\nwant %+v", lib, back, f)
		}
	}
}

func TestEmptyDocumentIsAnEmptyConfig(t *testing.T) {
	for lib, y := range libraries {
		var f fileconfig.File
		if err := y.unmarshal([]byte("# nothing yet\n"), &f); err != nil {
			t.Fatalf("%s: %v", lib, err)
		}
		res, err := f.Resolve()
		if err != nil || len(res.Instances) != 0 || res.Configs["default"].Config != bulkhead.DefaultConfig() {
			t.Errorf("%s: empty document resolved to %+v, %v", lib, res, err)
		}
	}
}

// blockRE finds fenced yaml blocks and the HTML comment that may precede
// them: <!-- config: error --> (the block must be refused) or
// <!-- config: skip --> (not a registry config, e.g. resilience4j's own).
var blockRE = regexp.MustCompile("(?m)(?:^<!-- config: (\\w+) -->\\n)?^```yaml\\n((?s:.*?))^```")

func TestDocsYAMLBlocks(t *testing.T) {
	files, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, file := range files {
		text, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range blockRE.FindAllStringSubmatch(string(text), -1) {
			mode, block := m[1], m[2]
			if mode == "skip" {
				continue
			}
			checked++
			var f fileconfig.File
			err := yamlv3.Unmarshal([]byte(block), &f)
			if err == nil {
				_, err = f.Resolve()
			}
			switch {
			case mode == "error" && err == nil:
				t.Errorf("%s: this block should be refused but is valid:\n%s", file, block)
			case mode != "error" && err != nil:
				t.Errorf("%s: %v\n%s", file, err, block)
			}
		}
	}
	if checked == 0 {
		t.Fatal("found no yaml block in docs/*.md")
	}
}

func TestYAMLFileReportsEveryProblemAndReadsUnbounded(t *testing.T) {
	doc := "instances:\n  a: { maxQueuedCalls: -1 }\n  b: { maxWaitDuration: 5 parsecs }\n  c: { maxQueuedCalls: unbounded, maxWaitDuration: 1s }\n"
	want := "bulkhead \"a\": maxQueuedCalls -1: must be >= 0\n" +
		"bulkhead \"b\": maxWaitDuration \"5 parsecs\": not a duration: want a number with a unit, such as \"50ms\" or \"0s\""
	for lib, y := range libraries {
		var f fileconfig.File
		if err := y.unmarshal([]byte(doc), &f); err == nil || err.Error() != want {
			t.Errorf("%s: decoding gave %v, want\n%s", lib, err, want)
		}
		var ok fileconfig.File
		if err := y.unmarshal([]byte("instances:\n  c: { maxQueuedCalls: unbounded, maxWaitDuration: 1s }\n"), &ok); err != nil {
			t.Fatalf("%s: %v", lib, err)
		}
		if got := *ok.Instances["c"].MaxQueuedCalls; got != bulkhead.Unbounded {
			t.Errorf("%s: maxQueuedCalls: unbounded decoded as %d", lib, got)
		}
	}
}
