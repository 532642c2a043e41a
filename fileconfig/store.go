package fileconfig

import (
	"encoding/json"
	"strconv"
	"strings"
)

// Store types: where an entry's permits live.
const (
	// StoreLocal is an in-process bulkhead.Semaphore; it is what an entry
	// without a store key gets.
	StoreLocal = "local"
	// StoreRedis is a fleet bulkhead shared by every replica, created by
	// the contrib/redis module (its NewRegistryFromFile); NewRegistry and
	// Apply refuse it, so that a fleet limit is never applied per process
	// by mistake.
	StoreRedis = "redis"
)

// Store is the value of the store key: where the permits of an entry live
// and, for a redis store, what to do while Redis is unreachable. Files write
// it as a type alone (store: redis) or as a mapping
// (store: {type: redis, unreachable: fail-over, localFraction: 0.25}).
// An entry that sets store replaces the inherited store as a whole.
type Store struct {
	// Type is StoreLocal ("" means local too) or StoreRedis.
	Type string `json:"type,omitempty" yaml:"type,omitempty"`
	// Unreachable is, for a redis store, "fail-closed" ("" means
	// fail-closed too) or "fail-over".
	Unreachable string `json:"unreachable,omitempty" yaml:"unreachable,omitempty"`
	// LocalFraction is, for fail-over, the share of maxConcurrentCalls a
	// replica admits on its own while Redis is unreachable, in (0, 1].
	LocalFraction float64 `json:"localFraction,omitempty" yaml:"localFraction,omitempty"`
}

// The policies a file may write for Store.Unreachable.
const (
	FailClosed = "fail-closed"
	FailOver   = "fail-over"
)

var storeKeys = mappingKeys[Store]{keys: []subkey[Store]{
	{"type", func(v any, s *Store) []problem {
		t, probs := decodeStoreType(v)
		s.Type = t
		return probs
	}},
	{"unreachable", func(v any, s *Store) []problem {
		p, ok := v.(string)
		switch {
		case ok && strings.EqualFold(p, FailClosed):
			s.Unreachable = FailClosed
		case ok && strings.EqualFold(p, FailOver):
			s.Unreachable = FailOver
		default:
			return problemf(v, "want %q or %q", FailClosed, FailOver)
		}
		return nil
	}},
	{"localFraction", func(v any, s *Store) []problem {
		f, ok := asFloat(v)
		if !ok {
			return problemf(v, "want a number in (0, 1], got %s", kindOf(v))
		}
		s.LocalFraction = f
		return nil
	}},
}}

func decodeStoreType(v any) (string, []problem) {
	t, ok := v.(string)
	switch {
	case ok && strings.EqualFold(t, StoreLocal):
		return StoreLocal, nil
	case ok && strings.EqualFold(t, StoreRedis):
		return StoreRedis, nil
	}
	return "", problemf(v, "not a store: want %q or %q", StoreLocal, StoreRedis)
}

// decodeStore accepts a store type or a mapping of the Store keys.
func decodeStore(v any) (Store, []problem) {
	if _, ok := v.(string); ok {
		t, probs := decodeStoreType(v)
		return Store{Type: t}, probs
	}
	return decodeMapping(v, storeKeys)
}

// checkStore is the rule of the store key that Config.Validate does not see.
func checkStore(e Entry) []problem {
	s := e.Store
	switch {
	case s.Type != StoreRedis && (s.Unreachable != "" || s.LocalFraction != 0):
		return []problem{{key: "unreachable", value: s.Unreachable, text: "only a redis store has an unreachable policy and a localFraction"}}
	case s.Unreachable == FailOver && (!(s.LocalFraction > 0) || s.LocalFraction > 1):
		return []problem{{key: "localFraction", value: s.LocalFraction, text: "must be in (0, 1] with fail-over"}}
	case s.Unreachable != FailOver && s.LocalFraction != 0:
		return []problem{{key: "localFraction", value: s.LocalFraction, text: "must be 0 unless unreachable is fail-over"}}
	}
	return nil
}

func asFloat(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case float32:
		return float64(n), true
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	case string:
		f, err := strconv.ParseFloat(n, 64)
		return f, err == nil
	}
	if i, ok := asInt(v); ok {
		return float64(i), true
	}
	return 0, false
}

// refuseRedis returns an *Error for every config and instance whose store
// is redis: NewRegistry and Apply create local Semaphores only.
func refuseRedis(res Resolved) error {
	var r report
	for kind, entries := range map[string]map[string]Entry{"config": res.Configs, "instance": res.Instances} {
		for name, e := range entries {
			if e.Store.Type == StoreRedis {
				r.add(kind, name, "store", StoreRedis, "a redis store is a fleet bulkhead: create this registry with NewRegistryFromFile of github.com/rxbulkhead/bulkhead/contrib/redis")
			}
		}
	}
	return r.err()
}
