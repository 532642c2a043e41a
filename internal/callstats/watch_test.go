package callstats

import (
	"iter"
	"slices"
	"sync"
	"testing"

	"github.com/rxbulkhead/bulkhead"
)

// source is a MetricsSource of fixed bulkheads whose events the test sends.
type source struct {
	mu      sync.Mutex
	names   []string
	stats   bulkhead.RegistryStats
	onEvent []func(bulkhead.Event)
	onEvict []func(string)
}

func (s *source) OnEvent(f func(bulkhead.Event)) func() {
	s.mu.Lock()
	s.onEvent = append(s.onEvent, f)
	i := len(s.onEvent) - 1
	s.mu.Unlock()
	return func() { s.mu.Lock(); s.onEvent[i] = nil; s.mu.Unlock() }
}

func (s *source) OnEvict(f func(string)) func() {
	s.mu.Lock()
	s.onEvict = append(s.onEvict, f)
	i := len(s.onEvict) - 1
	s.mu.Unlock()
	return func() { s.mu.Lock(); s.onEvict[i] = nil; s.mu.Unlock() }
}

func (s *source) Stats() bulkhead.RegistryStats { return s.stats }

func (s *source) AllMetrics() iter.Seq2[string, bulkhead.Metrics] {
	return func(yield func(string, bulkhead.Metrics) bool) {
		for i, n := range s.names {
			if !yield(n, bulkhead.Metrics{MaxAllowedConcurrentCalls: i + 1}) {
				return
			}
		}
	}
}

func (s *source) send(e bulkhead.Event) {
	for _, f := range s.onEvent {
		if f != nil {
			f(e)
		}
	}
}

func (s *source) evict(name string) {
	for _, f := range s.onEvict {
		if f != nil {
			f(name)
		}
	}
}

func TestWatchRecordsForgetsAndRunsItsHooks(t *testing.T) {
	src := &source{names: []string{"a"}}
	var hooked []string
	w := NewWatch(src, DefaultWaitBuckets, DefaultDurationBuckets, Hooks{
		Event: func(e bulkhead.Event) { hooked = append(hooked, "event "+e.Name) },
		Evict: func(name string) { hooked = append(hooked, "evict "+name) },
	})
	src.send(bulkhead.Event{Type: bulkhead.CallPermitted, Name: "a"})
	if w.Get("a").Count(bulkhead.CallPermitted) != 1 {
		t.Fatal("event not recorded")
	}
	src.evict("a")
	if w.Get("a") != nil {
		t.Fatal("evicted name kept")
	}
	w.Close()
	w.Close()
	src.send(bulkhead.Event{Type: bulkhead.CallPermitted, Name: "a"})
	if w.Get("a") != nil {
		t.Fatal("an event recorded after Close")
	}
	if !slices.Equal(hooked, []string{"event a", "evict a"}) {
		t.Fatalf("hooks ran %v", hooked)
	}
}

func TestEachReportsEverySourceAndSkipsANameAnEarlierOneHas(t *testing.T) {
	first := &source{names: []string{"a", "shared"}, stats: bulkhead.RegistryStats{Bulkheads: 2, Evictions: 1}}
	second := &source{names: []string{"b", "shared"}, stats: bulkhead.RegistryStats{Bulkheads: 2, CatchAllCalls: 3}}
	ws := []*Watch{NewWatch(first, nil, nil, Hooks{}), NewWatch(second, nil, nil, Hooks{})}
	var got []string
	Each(ws, func(w *Watch, name string, m bulkhead.Metrics) {
		got = append(got, name)
		if w.Source == second && name == "shared" {
			t.Error("the second source's shared name was reported")
		}
	})
	if !slices.Equal(got, []string{"a", "shared", "b"}) {
		t.Fatalf("Each reported %v", got)
	}
	if st := SumStats(ws); st != (bulkhead.RegistryStats{Bulkheads: 4, Evictions: 1, CatchAllCalls: 3}) {
		t.Fatalf("SumStats %+v", st)
	}
	got = nil
	Each(ws[:1], func(_ *Watch, name string, _ bulkhead.Metrics) { got = append(got, name) })
	if !slices.Equal(got, []string{"a", "shared"}) {
		t.Fatalf("Each of one source reported %v", got)
	}
}

// sliceSource is a MetricsSource of a type that is not comparable: == on
// two of them panics.
type sliceSource []string

func (sliceSource) OnEvent(func(bulkhead.Event)) func() { return func() {} }
func (sliceSource) OnEvict(func(string)) func()         { return func() {} }
func (sliceSource) Stats() bulkhead.RegistryStats       { return bulkhead.RegistryStats{} }
func (sliceSource) AllMetrics() iter.Seq2[string, bulkhead.Metrics] {
	return func(func(string, bulkhead.Metrics) bool) {}
}

func TestIsNilFindsTypedNils(t *testing.T) {
	for name, tc := range map[string]struct {
		src  bulkhead.MetricsSource
		want bool
	}{
		"nil interface":   {nil, true},
		"nil *Registry":   {(*bulkhead.Registry)(nil), true},
		"nil *source":     {(*source)(nil), true},
		"nil slice type":  {sliceSource(nil), true},
		"a source":        {&source{}, false},
		"a non-nil slice": {sliceSource{"a"}, false},
	} {
		if got := IsNil(tc.src); got != tc.want {
			t.Errorf("%s: IsNil = %v, want %v", name, got, tc.want)
		}
	}
}

func TestDistinctDropsRepeatsWithoutComparingTheIncomparable(t *testing.T) {
	a, b := &source{}, &source{}
	s1, s2 := sliceSource{"x"}, sliceSource{"x"}
	got := Distinct([]bulkhead.MetricsSource{a, b, a, s1, s2, b})
	if len(got) != 4 || got[0] != bulkhead.MetricsSource(a) || got[1] != bulkhead.MetricsSource(b) {
		t.Fatalf("Distinct kept %d sources: %v", len(got), got)
	}
}
