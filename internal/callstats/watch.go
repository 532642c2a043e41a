package callstats

import (
	"reflect"
	"slices"
	"time"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/internal/nilcheck"
)

// Watch is a Table fed by the events of one bulkhead.MetricsSource: it
// records every event of the source's bulkheads, present and future, and
// forgets the names the source evicts.
type Watch struct {
	Source bulkhead.MetricsSource
	*Table
	hooks        Hooks
	stop, forget func()
}

// Hooks are what an exporter does besides the Table's accounting: Event
// runs after each event is recorded, on the goroutine that publishes it;
// Evict after an evicted name is forgotten, on the source's evicting
// goroutine. Either may be nil.
type Hooks struct {
	Event func(bulkhead.Event)
	Evict func(name string)
}

// NewWatch starts recording the events of src into a table with the
// given bounds (see New). Call Close to stop.
func NewWatch(src bulkhead.MetricsSource, waitBounds, durationBounds []time.Duration, hooks Hooks) *Watch {
	w := &Watch{Source: src, Table: New(waitBounds, durationBounds), hooks: hooks}
	// Evictions first: a name evicted before OnEvent returns is forgotten
	// rather than kept with the events it published.
	w.forget = src.OnEvict(w.evicted)
	w.stop = src.OnEvent(w.record)
	return w
}

func (w *Watch) record(e bulkhead.Event) {
	w.Record(e)
	if w.hooks.Event != nil {
		w.hooks.Event(e)
	}
}

func (w *Watch) evicted(name string) {
	w.Forget(name)
	if w.hooks.Evict != nil {
		w.hooks.Evict(name)
	}
}

// Close stops recording; the table keeps what it has. It is idempotent.
func (w *Watch) Close() {
	w.stop()
	w.forget()
}

// Each calls f with every live bulkhead of the watches' sources, source
// after source, each in name order, skipping a name that an earlier source
// already reported: two series cannot share a name and labels, so a pool
// named like a Semaphore of an earlier source is left out.
func Each(ws []*Watch, f func(w *Watch, name string, m bulkhead.Metrics)) {
	if len(ws) == 1 {
		for name, m := range ws[0].Source.AllMetrics() {
			f(ws[0], name, m)
		}
		return
	}
	seen := map[string]bool{}
	for i, w := range ws {
		var names []string
		for name, m := range w.Source.AllMetrics() {
			if seen[name] {
				continue
			}
			if i < len(ws)-1 {
				names = append(names, name)
			}
			f(w, name, m)
		}
		for _, n := range names {
			seen[n] = true
		}
	}
}

// SumStats returns the sum of the sources' RegistryStats.
func SumStats(ws []*Watch) bulkhead.RegistryStats {
	var st bulkhead.RegistryStats
	for _, w := range ws {
		s := w.Source.Stats()
		st.Bulkheads += s.Bulkheads
		st.Evictions += s.Evictions
		st.CatchAllCalls += s.CatchAllCalls
	}
	return st
}

// IsNil reports whether src is nil: the nil interface, or a nil pointer
// (or map, func...) in it, such as a nil *bulkhead.Registry or a nil fleet
// *Registry, which would panic at the first call of a method.
func IsNil(src bulkhead.MetricsSource) bool { return nilcheck.Is(src) }

// Distinct returns srcs without the repeats of a source (the same pointer,
// or equal comparable values such as two pool.Registry.MetricsSource() of
// one registry), keeping the first: a source watched twice would count its
// registry-wide figures twice. A source of a type that is not comparable
// is never taken for a repeat.
func Distinct(srcs []bulkhead.MetricsSource) []bulkhead.MetricsSource {
	out := make([]bulkhead.MetricsSource, 0, len(srcs))
	for _, s := range srcs {
		if !slices.ContainsFunc(out, func(o bulkhead.MetricsSource) bool { return same(o, s) }) {
			out = append(out, s)
		}
	}
	return out
}

// same reports whether a and b are the same source, without the panic of
// == on two values of one type that is not comparable.
func same(a, b bulkhead.MetricsSource) bool {
	ta := reflect.TypeOf(a)
	return ta == reflect.TypeOf(b) && ta.Comparable() && a == b
}
