package otel

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/internal/waitstats"
)

// WithWaitBuckets sets the explicit bucket boundaries of
// bulkhead.wait.duration. They must be positive and strictly increasing
// (Start fails otherwise). The default is DefaultWaitBuckets.
func WithWaitBuckets(bounds ...time.Duration) Option {
	return optionFunc(func(c *config) { c.buckets = slices.Clone(bounds) })
}

// DefaultWaitBuckets returns the default boundaries of bulkhead.wait.duration:
// 100 µs, 250 µs, 500 µs, 1 ms, 2.5 ms, 5 ms, 10 ms, 25 ms, 50 ms, 100 ms,
// 250 ms, 500 ms, 1 s, 2.5 s, 5 s and 10 s, the same as contrib/prometheus.
func DefaultWaitBuckets() []time.Duration { return slices.Clone(waitstats.DefaultBuckets) }

// waitInstruments are the instruments fed by events: the wait histogram,
// recorded by the goroutine that publishes each event, and the rejections
// by reason, counted in a waitstats.Table and observed by the callback.
type waitInstruments struct {
	wait       metric.Float64Histogram
	rejections metric.Int64Observable
	shadowed   metric.Int64Observable
	table      *waitstats.Table
	attrs      sync.Map // bulkhead name -> *waitAttrs, dropped on eviction
	stop       func()   // unsubscribes the listener (Registry.OnEvent)
	forget     func()   // unsubscribes from evictions (Registry.OnEvict)
}

// waitAttrs are the record options of one bulkhead name, built once, so
// that recording a wait allocates nothing.
type waitAttrs struct {
	granted, rejected []metric.RecordOption
}

func newWaitInstruments(meter metric.Meter, cfg config) (*waitInstruments, error) {
	buckets := cfg.buckets
	if buckets == nil {
		buckets = waitstats.DefaultBuckets
	}
	if err := waitstats.CheckBuckets(buckets); err != nil {
		return nil, fmt.Errorf("bulkhead/contrib/otel: WithWaitBuckets: %w", err)
	}
	bounds := make([]float64, len(buckets))
	for i, b := range buckets {
		bounds[i] = b.Seconds()
	}
	w := &waitInstruments{table: waitstats.New(buckets)}
	var err, e error
	w.wait, e = meter.Float64Histogram("bulkhead.wait.duration", metric.WithUnit("s"),
		metric.WithDescription("Time calls waited for a permit, by outcome: granted (zero for a permit granted at once) or rejected (zero for a rejection without waiting)."),
		metric.WithExplicitBucketBoundaries(bounds...))
	err = errors.Join(err, e)
	w.rejections, e = meter.Int64ObservableCounter("bulkhead.rejected_calls", metric.WithUnit("{call}"),
		metric.WithDescription("Calls rejected, by reason: no_wait, queue_full, wait_timeout, evicted."))
	err = errors.Join(err, e)
	w.shadowed, e = meter.Int64ObservableCounter("bulkhead.shadowed_calls", metric.WithUnit("{call}"),
		metric.WithDescription("Calls a bulkhead in shadow mode let through that it would have queued (would_wait) or rejected (no_wait, queue_full, evicted)."))
	err = errors.Join(err, e)
	return w, err
}

// start subscribes the listener to reg's bulkheads, present and future.
func (w *waitInstruments) start(reg *bulkhead.Registry) {
	w.stop = reg.OnEvent(w.record)
	w.forget = reg.OnEvict(func(name string) {
		w.table.Forget(name)
		w.attrs.Delete(name)
	})
}

func (w *waitInstruments) close() {
	w.stop()
	w.forget()
}

// record is the listener: it runs on the goroutine that publishes e.
func (w *waitInstruments) record(e bulkhead.Event) {
	w.table.Record(e) // rejections and shadowed calls
	if e.Type != bulkhead.CallPermitted && e.Type != bulkhead.CallRejected {
		return
	}
	a := w.attrsOf(e.Name)
	opts := a.granted
	if e.Type == bulkhead.CallRejected {
		opts = a.rejected
	}
	w.wait.Record(context.Background(), e.Wait.Seconds(), opts...)
}

func (w *waitInstruments) attrsOf(name string) *waitAttrs {
	if v, ok := w.attrs.Load(name); ok {
		return v.(*waitAttrs)
	}
	outcome := func(o string) []metric.RecordOption {
		return []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(attribute.String("name", name), attribute.String("outcome", o)))}
	}
	v, _ := w.attrs.LoadOrStore(name, &waitAttrs{granted: outcome("granted"), rejected: outcome("rejected")})
	return v.(*waitAttrs)
}

// reasonSets returns the attribute sets of the rejection counter of name,
// in the order of waitstats.Reasons.
func reasonSets(name string) (out [len(waitstats.Reasons)]metric.MeasurementOption) {
	for i, r := range waitstats.Reasons {
		out[i] = metric.WithAttributeSet(attribute.NewSet(attribute.String("name", name), attribute.String("reason", waitstats.ReasonLabel(r))))
	}
	return out
}

// shadowSets returns the attribute sets of the shadow counter of name, by
// index of waitstats.Stats.Shadowed.
func shadowSets(name string) (out [1 + len(waitstats.Reasons)]metric.MeasurementOption) {
	for i := range out {
		out[i] = metric.WithAttributeSet(attribute.NewSet(attribute.String("name", name), attribute.String("reason", waitstats.ShadowLabel(i))))
	}
	return out
}

// observeRejections reports the rejections of the bulkhead named name, and
// its shadow counts if shadow is set or one is not zero.
func (w *waitInstruments) observeRejections(o metric.Observer, name string, a *attrSets, shadow bool) {
	s := w.table.Get(name)
	if s == nil {
		s = &waitstats.Stats{}
	}
	for i := range waitstats.Reasons {
		o.ObserveInt64(w.rejections, int64(s.Rejections[i].Load()), a.reasons[i])
	}
	var counts [len(s.Shadowed)]uint64
	for i := range s.Shadowed {
		counts[i] = s.Shadowed[i].Load()
		shadow = shadow || counts[i] > 0
	}
	if !shadow {
		return
	}
	for i, n := range counts {
		if i == int(bulkhead.WaitTimeout) { // shadow mode never reports a wait timeout
			continue
		}
		o.ObserveInt64(w.shadowed, int64(n), a.shadows[i])
	}
}
