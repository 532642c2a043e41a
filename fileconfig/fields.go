package fileconfig

import (
	"strings"
	"time"

	"github.com/rxbulkhead/bulkhead"
)

// This file is the one place that lists the settings of a Spec: one row of
// specFields per key. Decoding, inheritance, validation and messages are
// driven by the table; see "Adding a setting" in the package documentation.

// specField is one setting of a Spec.
type specField struct {
	key string // as written in messages, e.g. "maxQueuedCalls"
	// decode turns the decoded value v (never nil) into the setting of s,
	// or returns what is wrong with it.
	decode func(v any, s *Spec) []problem
	// isSet reports whether s sets the key. Problems of an entry's
	// resolved value are reported only at the entries that set the key.
	isSet func(s Spec) bool
	// over copies the setting of s onto e, which holds what the entry
	// inherits; s sets the key. Nil for baseConfig.
	over func(s Spec, e *Entry)
	// configField is the bulkhead.Config field that the key sets: the
	// *ConfigError values of Config.Validate for it are this key's
	// problems. Empty if the key sets no Config field.
	configField string
	// check returns the problems of a resolved entry that sets the key and
	// that Config.Validate does not see (rules of a setting outside
	// bulkhead.Config). Optional.
	check func(e Entry) []problem
}

// specFields are the keys of an entry, in the order messages list them.
var specFields = []specField{
	{
		key: "baseConfig",
		decode: func(v any, s *Spec) []problem {
			name, ok := v.(string)
			if !ok {
				return problemf(v, "want the name of a config, got %s", kindOf(v))
			}
			s.BaseConfig = name
			return nil
		},
		isSet: func(s Spec) bool { return s.BaseConfig != "" },
	},
	setting("maxConcurrentCalls", "MaxConcurrentCalls", func(s *Spec) **int { return &s.MaxConcurrentCalls },
		decodeCount, func(e *Entry, n int) { e.Config.MaxConcurrentCalls = n }),
	setting("maxWaitDuration", "MaxWaitDuration", func(s *Spec) **Duration { return &s.MaxWaitDuration },
		decodeDuration, func(e *Entry, d Duration) { e.Config.MaxWaitDuration = time.Duration(d) }),
	setting("maxQueuedCalls", "MaxQueuedCalls", func(s *Spec) **int { return &s.MaxQueuedCalls },
		decodeCount, func(e *Entry, n int) { e.Config.MaxQueuedCalls = n }),
	setting("queueOrder", "QueueOrder", func(s *Spec) **bulkhead.QueueOrder { return &s.QueueOrder },
		decodeQueueOrder, func(e *Entry, o bulkhead.QueueOrder) { e.Config.QueueOrder = o }),
	setting("shadowMode", "ShadowMode", func(s *Spec) **bool { return &s.ShadowMode },
		decodeBool, func(e *Entry, b bool) { e.Config.ShadowMode = b }),
	withCheck(setting("store", "", func(s *Spec) **Store { return &s.Store },
		decodeStore, func(e *Entry, st Store) { e.Store = st }), checkStore),
	adaptiveField, // adaptive.go
	setting("group", "", func(s *Spec) **string { return &s.Group },
		decodeName("group"), func(e *Entry, g string) { e.Partner.Group = g }),
	setting("class", "", func(s *Spec) **string { return &s.Class },
		decodeName("class"), func(e *Entry, c string) { e.Partner.Class = c }),
}

// withCheck adds a check to a row.
func withCheck(f specField, check func(e Entry) []problem) specField {
	f.check = check
	return f
}

// setting builds the row of a pointer field of Spec: field returns the
// address of the field in a Spec, decode parses a value, set applies it to
// an Entry.
func setting[V any](key, configField string, field func(*Spec) **V, decode func(v any) (V, []problem), set func(*Entry, V)) specField {
	return specField{
		key: key,
		decode: func(v any, s *Spec) []problem {
			x, probs := decode(v)
			if len(probs) == 0 {
				*field(s) = &x
			}
			return probs
		},
		isSet:       func(s Spec) bool { return *field(&s) != nil },
		over:        func(s Spec, e *Entry) { set(e, **field(&s)) },
		configField: configField,
	}
}

// foreignKeys are resilience4j keys without an equivalent, with the reason.
var foreignKeys = map[string]string{
	"writablestacktraceenabled":       "resilience4j setting with no equivalent here: errors carry no stack trace; remove it",
	"eventconsumerbuffersize":         "resilience4j setting with no equivalent here: events go to listeners registered with OnEvent, there is no buffer; remove it",
	"faircallhandlingstrategyenabled": "resilience4j setting with no equivalent here: waiters are always served in QueueOrder (FIFO by default); remove it",
}

// unbounded is how files write bulkhead.Unbounded.
const unbounded = "unbounded"

// decodeCount accepts an integer (a number or a decimal string) or
// "unbounded" (bulkhead.Unbounded, any letter case).
func decodeCount(v any) (int, []problem) {
	if s, ok := v.(string); ok && strings.EqualFold(s, unbounded) {
		return bulkhead.Unbounded, nil
	}
	n, ok := asInt(v)
	if !ok {
		return 0, problemf(v, "want an integer or %q, got %s", unbounded, kindOf(v))
	}
	return n, nil
}

// decodeDuration accepts text ("50ms") and the number zero; any other
// number has no unit and is rejected.
func decodeDuration(v any) (Duration, []problem) {
	if s, ok := v.(string); ok {
		var d Duration
		if d.UnmarshalText([]byte(s)) != nil {
			return 0, problemf(v, durationRule)
		}
		return d, nil
	}
	if n, ok := asInt(v); ok && n == 0 {
		return 0, nil
	}
	return 0, problemf(v, durationRule)
}

// decodeBool accepts true and false (a YAML or JSON boolean, not a string).
func decodeBool(v any) (bool, []problem) {
	b, ok := v.(bool)
	if !ok {
		return false, problemf(v, "want true or false, got %s", kindOf(v))
	}
	return b, nil
}

// decodeName accepts a string: the name of a budget's group or class ("" is
// none). Whether the budget has it is checked by checkPartners.
func decodeName(what string) func(v any) (string, []problem) {
	return func(v any) (string, []problem) {
		s, ok := v.(string)
		if !ok {
			return "", problemf(v, "want the name of a %s of the file's budget, got %s", what, kindOf(v))
		}
		return s, nil
	}
}

func decodeQueueOrder(v any) (bulkhead.QueueOrder, []problem) {
	var o bulkhead.QueueOrder
	s, ok := v.(string)
	if !ok || o.UnmarshalText([]byte(s)) != nil {
		return 0, problemf(v, "not a queue order: want FIFO or LIFO")
	}
	return o, nil
}
