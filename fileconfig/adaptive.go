package fileconfig

import (
	"errors"
	"maps"
	"slices"
	"strings"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/adaptive"
)

// AdaptiveSpec is the value of the "adaptive" key of an entry: the
// bulkhead's limit follows its partner (package adaptive) instead of
// staying at maxConcurrentCalls, which becomes the starting point.
//
//	instances:
//	  walmart: { maxConcurrentCalls: 20, adaptive: { algorithm: gradient2, min: 5, max: 200 } }
//
// Each subkey that is set overrides what the entry inherits (an inherited
// adaptive section is extended, not replaced); "adaptive: {}" makes an
// entry adaptive with every default.
type AdaptiveSpec struct {
	// Algorithm is one of adaptive.Names(): aimd, vegas, gradient2,
	// capacity, setpoint, hinge. Empty: inherit, or capacity
	// (adaptive.Config's default). hinge also sets the configuration
	// adaptive.Hinge needs: Window.PerCall and MaxCutPerSecond 1. It needs
	// each call's start too, which WatchAdaptive's controllers get from
	// every integration of this module (see WatchAdaptive).
	Algorithm string `json:"algorithm,omitempty" yaml:"algorithm,omitempty"`
	// Min overrides adaptive.Config.Min (0: 1).
	Min *int `json:"min,omitempty" yaml:"min,omitempty"`
	// Max overrides adaptive.Config.Max (0: 1000).
	Max *int `json:"max,omitempty" yaml:"max,omitempty"`
	// Initial overrides adaptive.Config.Initial (0: maxConcurrentCalls).
	Initial *int `json:"initial,omitempty" yaml:"initial,omitempty"`
}

// AdaptiveEntry is a resolved adaptive section.
type AdaptiveEntry struct {
	// Algorithm is the name of the algorithm, "" for the default.
	Algorithm string
	// Config is what the bulkhead's controller is built from.
	Config adaptive.Config
}

// adaptiveField is the row of specFields for the "adaptive" key.
var adaptiveField = specField{
	key: "adaptive",
	decode: func(v any, s *Spec) []problem {
		a, probs := decodeMapping(v, adaptiveSubkeys)
		if len(probs) == 0 {
			s.Adaptive = &a
		}
		return probs
	},
	isSet: func(s Spec) bool { return s.Adaptive != nil },
	over: func(s Spec, e *Entry) {
		next := AdaptiveEntry{}
		if e.Adaptive != nil {
			next = *e.Adaptive
		}
		a := s.Adaptive
		if a.Algorithm != "" {
			next.Algorithm = strings.ToLower(a.Algorithm)
			next.Config.Algorithm, _ = adaptive.ByName(next.Algorithm)
			// what the algorithm needs, not inherited from another one
			next.Config.Window, next.Config.MaxCutPerSecond = adaptive.Window{}, 0
			if next.Algorithm == adaptive.NameHinge {
				next.Config.Window.PerCall, next.Config.MaxCutPerSecond = true, 1
			}
		}
		if a.Min != nil {
			next.Config.Min = *a.Min
		}
		if a.Max != nil {
			next.Config.Max = *a.Max
		}
		if a.Initial != nil {
			next.Config.Initial = *a.Initial
		}
		e.Adaptive = &next
	},
	check: func(e Entry) []problem {
		if strings.EqualFold(e.Store.Type, StoreRedis) {
			return problemf(nil, "needs a local store: a redis store's limit is shared by every replica, which one controller per process cannot adapt")
		}
		err := e.Adaptive.Config.Validate()
		var ce *adaptive.ConfigError
		if !errors.As(err, &ce) {
			return nil
		}
		return []problem{{key: strings.ToLower(ce.Field), value: ce.Value, text: ce.Rule}}
	},
}

// adaptiveSubkeys are the subkeys of "adaptive".
var adaptiveSubkeys = mappingKeys[AdaptiveSpec]{keys: []subkey[AdaptiveSpec]{
	{"algorithm", func(v any, a *AdaptiveSpec) []problem {
		name, ok := v.(string)
		if !ok {
			return problemf(v, "want the name of an algorithm (%s), got %s", strings.Join(adaptive.Names(), ", "), kindOf(v))
		}
		if _, ok := adaptive.ByName(strings.ToLower(name)); !ok {
			return problemf(v, "unknown algorithm (known: %s)", strings.Join(adaptive.Names(), ", "))
		}
		a.Algorithm = name
		return nil
	}},
	{"min", adaptiveCount(func(a *AdaptiveSpec) **int { return &a.Min })},
	{"max", adaptiveCount(func(a *AdaptiveSpec) **int { return &a.Max })},
	{"initial", adaptiveCount(func(a *AdaptiveSpec) **int { return &a.Initial })},
}}

// adaptiveCount decodes a non-negative integer subkey.
func adaptiveCount(field func(*AdaptiveSpec) **int) func(v any, a *AdaptiveSpec) []problem {
	return func(v any, a *AdaptiveSpec) []problem {
		n, ok := asInt(v)
		if !ok || n < 0 {
			return problemf(v, "want an integer >= 0, got %s", kindOf(v))
		}
		*field(a) = &n
		return nil
	}
}

// WatchAdaptive resolves f and makes adaptive the bulkheads of reg whose
// entry has an "adaptive" section: every instance that has one (or
// inherits one) gets its controller at once, and, if the "default" config
// has one, so does every other bulkhead reg creates, at its first call.
// The controllers learn from the semaphores' events (adaptive.WatchRegistry),
// so the bulkheads keep being used as they are, by the operators, the
// net/http transport or anything else. Bulkheads without an adaptive
// section keep their static limit. opts go to adaptive.WatchRegistry (give
// it reg's clock with adaptive.WithClock). Call Stop on the result to end
// the adaptation. It fails, changing nothing, with the error of Resolve.
//
// reg is typically the result of NewRegistry(f): WatchAdaptive does not
// apply the file's static settings itself.
//
// Algorithm hinge needs each call's start, to find the call's own grant
// and level: every integration of this module gives it (a Lease, the
// reactive operators, iterate, bulkheadhttp, contrib/grpc finish with the
// call's duration in its CallFinished event), and with it adaptive.Hinge
// does as well as with typed calls on the adaptive matrix
// (docs/benchmarks.md). Code that gives permits back with a bare
// Semaphore.FinishCall has its calls matched with the oldest grant, where
// hinge does worse (see adaptive.Hinge).
func WatchAdaptive(reg *bulkhead.Registry, f File, opts ...adaptive.Option) (*adaptive.Registry, error) {
	if reg == nil {
		panic("fileconfig: WatchAdaptive called with a nil *bulkhead.Registry")
	}
	res, err := f.Resolve()
	if err != nil {
		return nil, err
	}
	def := res.Configs[bulkhead.DefaultConfigName].Adaptive
	var cfg adaptive.Config
	if def != nil {
		cfg = def.Config
	} else {
		opts = append(slices.Clone(opts), adaptive.OnlyConfigured())
	}
	ar, err := adaptive.WatchRegistry(reg, cfg, opts...)
	if err != nil {
		return nil, err
	}
	for _, name := range slices.Sorted(maps.Keys(res.Instances)) {
		if a := res.Instances[name].Adaptive; a != nil {
			if _, err := ar.Configure(name, a.Config); err != nil {
				ar.Stop()
				return nil, err
			}
		}
	}
	return ar, nil
}
