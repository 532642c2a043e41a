package fileconfig

import (
	"reflect"
	"testing"
)

// adaptiveSpec is the kind of nested setting the package documentation
// describes (adaptive: {algorithm: gradient2, min: 5, max: 200}); the test
// builds its decoder the documented way, so the extension path is checked
// before anyone needs it.
type adaptiveSpec struct {
	Algorithm string
	Min, Max  *int
}

var adaptiveKeys = mappingKeys[adaptiveSpec]{keys: []subkey[adaptiveSpec]{
	{"algorithm", func(v any, a *adaptiveSpec) []problem {
		s, ok := v.(string)
		if !ok {
			return problemf(v, "want the name of an algorithm, got %s", kindOf(v))
		}
		a.Algorithm = s
		return nil
	}},
	{"min", func(v any, a *adaptiveSpec) []problem {
		n, probs := decodeCount(v)
		if probs == nil {
			a.Min = &n
		}
		return probs
	}},
	{"max", func(v any, a *adaptiveSpec) []problem {
		n, probs := decodeCount(v)
		if probs == nil {
			a.Max = &n
		}
		return probs
	}},
}}

func TestNestedSettingDecodesWithRelaxedKeysAndNamesSubkeysInErrors(t *testing.T) {
	got, probs := decodeMapping(map[string]any{"Algorithm": "gradient2", "MIN": "5", "max": 200}, adaptiveKeys)
	if len(probs) != 0 || got.Algorithm != "gradient2" || *got.Min != 5 || *got.Max != 200 {
		t.Fatalf("decoded %+v, problems %v", got, probs)
	}

	_, probs = decodeMapping(map[string]any{"algorithm": 3, "min": "few", "step": 1}, adaptiveKeys)
	var r report
	r.addProblems("instance", "walmart", "adaptive", probs)
	var msgs []string
	for _, e := range r.errs {
		msgs = append(msgs, e.Error())
	}
	want := []string{
		`bulkhead "walmart": adaptive.algorithm 3: want the name of an algorithm, got a number`,
		`bulkhead "walmart": adaptive.min "few": want an integer or "unbounded", got a string`,
		`bulkhead "walmart": adaptive.step: unknown key (known: algorithm, max, min)`,
	}
	if !reflect.DeepEqual(msgs, want) {
		t.Fatalf("errors:\n got %q\nwant %q", msgs, want)
	}

	_, probs = decodeMapping(5, adaptiveKeys)
	r = report{}
	r.addProblems("instance", "walmart", "adaptive", probs)
	if got, want := r.errs[0].Error(), `bulkhead "walmart": adaptive 5: want a mapping of settings, got a number`; got != want {
		t.Fatalf("error %q, want %q", got, want)
	}
}
