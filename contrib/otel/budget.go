package otel

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/internal/callstats"
)

// BudgetInstruments are the OpenTelemetry instruments that observe one or
// more hub budgets (bulkhead.Budget), with the attribute budget (the
// budget's name) and, where it applies, class or group:
//
//	bulkhead.budget.max_allowed_permits       Int64ObservableGauge    {permit} configured permits (BudgetConfig.Size)
//	bulkhead.budget.available_permits         Int64ObservableGauge    {permit} free permits
//	bulkhead.budget.max_queued_calls          Int64ObservableGauge    {call}   budget-wide queue bound (bulkhead.Unbounded: none)
//	bulkhead.budget.partners                  Int64ObservableGauge    {partner} partners the budget keeps state for
//	bulkhead.budget.permits_in_use            Int64ObservableGauge    {permit} permits held by the class's calls (class)
//	bulkhead.budget.queued_calls              Int64ObservableGauge    {call}   calls of the class waiting in the budget (class)
//	bulkhead.budget.calls                     Int64ObservableCounter  {call}   events (class; kind = permitted, rejected,
//	                                                                           finished, cancelled)
//	bulkhead.budget.granted_permits           Int64ObservableCounter  {permit} permits granted, the sum of the granted
//	                                                                           calls' weights (class)
//	bulkhead.budget.rejected_calls            Int64ObservableCounter  {call}   rejections (class; reason = no_wait, queue_full,
//	                                                                           wait_timeout, evicted, too_heavy)
//	bulkhead.budget.wait.duration             Float64Histogram        s        time calls waited in the budget
//	                                                                           (BudgetEvent.Wait; class; outcome = granted,
//	                                                                           rejected)
//	bulkhead.budget.group.nominal_permits     Int64ObservableGauge    {permit} the group's Nominal share (group)
//	bulkhead.budget.group.permits_in_use      Int64ObservableGauge    {permit} permits held by the group's partners (group)
//	bulkhead.budget.group.queued_calls        Int64ObservableGauge    {call}   calls of the group's partners waiting in the
//	                                                                           budget (group)
//	bulkhead.budget.group.reserved_permits    Int64ObservableGauge    {permit} the unused part of the group's reserve
//	                                                                           (Nominal - Lendable), kept free for it (group)
//
// Through a Prometheus exporter they are the series of contrib/prometheus's
// BudgetCollector (bulkhead_budget_permits_in_use, ..._calls_total,
// bulkhead_budget_wait_duration_seconds...). The wait histogram's
// boundaries are DefaultWaitBuckets unless WithWaitBuckets says otherwise;
// it is recorded by the goroutine that publishes each event, for every
// CallPermitted and CallRejected (zero for a call decided at once). The
// other options of Start do not apply here, but WithMeterProvider.
//
// The partner of a call is not an attribute: partners are as many as the
// keys of a registry, classes and groups are few and fixed by the
// configuration (a class is never removed from a live budget; a group
// dropped by ChangeConfig is observed no more). Gauges are read from
// Budget.Metrics and Budget.Config at each collection; counts come from
// the budgets' events (Budget.OnEvent), from StartBudgets on.
type BudgetInstruments struct {
	watches []*callstats.BudgetWatch
	reg     metric.Registration
	closed  atomic.Bool

	size, available, maxQueued, partners, inUse, queued  metric.Int64Observable
	calls, permits, rejections                           metric.Int64Observable
	groupNominal, groupInUse, groupQueued, groupReserved metric.Int64Observable
	wait                                                 metric.Float64Histogram

	mu    sync.Mutex                // guards sets
	sets  map[[2]string]*budgetSets // by budget and class, or budget and "group:"+group
	waits sync.Map                  // [2]string{budget, class} -> *budgetWaitAttrs
}

// budgetSets are the attribute sets of one class's or group's
// observations, built once.
type budgetSets struct {
	plain   metric.MeasurementOption
	kinds   [len(callstats.Kinds)]metric.MeasurementOption
	reasons [len(callstats.BudgetReasons)]metric.MeasurementOption
}

type budgetWaitAttrs struct{ granted, rejected []metric.RecordOption }

// StartBudgets creates the instruments on the meter named ScopeName,
// starts counting the events of budgets and registers the instruments'
// callback. It fails, counting nothing, if there is no budget, a budget or
// an option is nil (the error gives its index), two share a name,
// WithWaitBuckets has bad bounds, or the meter cannot create an instrument
// or register the callback. Call Close to stop.
func StartBudgets(budgets []*bulkhead.Budget, opts ...Option) (*BudgetInstruments, error) {
	if len(budgets) == 0 {
		return nil, errors.New("bulkhead/contrib/otel: StartBudgets called without a budget")
	}
	seen := map[string]bool{}
	for i, b := range budgets {
		if b == nil {
			return nil, fmt.Errorf("bulkhead/contrib/otel: StartBudgets called with a nil *bulkhead.Budget at index %d", i)
		}
		if seen[b.Name()] {
			return nil, fmt.Errorf("bulkhead/contrib/otel: StartBudgets called with two budgets named %s", b.Name())
		}
		seen[b.Name()] = true
	}
	cfg, err := newConfig("StartBudgets", opts)
	if err != nil {
		return nil, err
	}
	waitBounds, err := bounds("WithWaitBuckets", cfg.waitBuckets, callstats.DefaultWaitBuckets)
	if err != nil {
		return nil, err
	}
	meter := cfg.provider.Meter(ScopeName)
	in := &BudgetInstruments{sets: map[[2]string]*budgetSets{}}
	gauge := func(name, unit, desc string) metric.Int64Observable {
		g, e := meter.Int64ObservableGauge(name, metric.WithUnit(unit), metric.WithDescription(desc))
		err = errors.Join(err, e)
		return g
	}
	counter := func(name, unit, desc string) metric.Int64Observable {
		c, e := meter.Int64ObservableCounter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		err = errors.Join(err, e)
		return c
	}
	in.size = gauge("bulkhead.budget.max_allowed_permits", "{permit}", "Configured number of permits of the budget (BudgetConfig.Size).")
	in.available = gauge("bulkhead.budget.available_permits", "{permit}", "Number of free permits of the budget.")
	in.maxQueued = gauge("bulkhead.budget.max_queued_calls", "{call}", "Configured bound of the calls waiting in the budget, all classes together; bulkhead.Unbounded (MaxInt) means no bound.")
	in.partners = gauge("bulkhead.budget.partners", "{partner}", "Number of partners the budget keeps state for (BudgetMetrics.Partners); the bulkheads a registry evicts leave it.")
	in.inUse = gauge("bulkhead.budget.permits_in_use", "{permit}", "Number of permits of the budget held by the calls of the class.")
	in.queued = gauge("bulkhead.budget.queued_calls", "{call}", "Number of calls of the class waiting in the budget.")
	in.calls = counter("bulkhead.budget.calls", "{call}", "Calls of the class by kind (permitted, rejected, finished, cancelled), counted since the instruments started.")
	in.permits = counter("bulkhead.budget.granted_permits", "{permit}", "Permits granted to the calls of the class: the sum of the granted calls' weights.")
	in.rejections = counter("bulkhead.budget.rejected_calls", "{call}", "Calls of the class the budget rejected, by reason: no_wait, queue_full, wait_timeout, evicted, too_heavy.")
	in.groupNominal = gauge("bulkhead.budget.group.nominal_permits", "{permit}", "Configured nominal share of the group (GroupConfig.Nominal).")
	in.groupInUse = gauge("bulkhead.budget.group.permits_in_use", "{permit}", "Number of permits of the budget held by the partners of the group.")
	in.groupQueued = gauge("bulkhead.budget.group.queued_calls", "{call}", "Number of calls of the group's partners waiting in the budget (after their partner's permit).")
	in.groupReserved = gauge("bulkhead.budget.group.reserved_permits", "{permit}", "Permits kept free for the group: the part of its reserve (Nominal - Lendable) it does not use.")
	var e error
	in.wait, e = meter.Float64Histogram("bulkhead.budget.wait.duration", metric.WithUnit("s"),
		metric.WithDescription("Time calls of the class waited in the budget (after their partner's permit), by outcome: granted or rejected (zero when decided at once)."),
		metric.WithExplicitBucketBoundaries(waitBounds...))
	if err = errors.Join(err, e); err != nil {
		return nil, err
	}
	for _, b := range budgets {
		in.watches = append(in.watches, callstats.NewBudgetWatch(b, nil, in.record)) // the histogram is the SDK's
	}
	in.reg, err = meter.RegisterCallback(in.observe, in.size, in.available, in.maxQueued, in.partners, in.inUse, in.queued,
		in.calls, in.permits, in.rejections, in.groupNominal, in.groupInUse, in.groupQueued, in.groupReserved)
	if err != nil {
		in.closeWatches()
		return nil, err
	}
	return in, nil
}

// record is the watches' hook: it runs on the goroutine that publishes e
// and records the wait histogram, unless Close has begun.
func (in *BudgetInstruments) record(e bulkhead.BudgetEvent) {
	if in.closed.Load() {
		return
	}
	switch e.Type {
	case bulkhead.CallPermitted:
		in.wait.Record(context.Background(), e.Wait.Seconds(), in.waitAttrsOf(e.Budget, e.Class).granted...)
	case bulkhead.CallRejected:
		in.wait.Record(context.Background(), e.Wait.Seconds(), in.waitAttrsOf(e.Budget, e.Class).rejected...)
	}
}

func (in *BudgetInstruments) waitAttrsOf(budget, class string) *budgetWaitAttrs {
	key := [2]string{budget, class}
	if v, ok := in.waits.Load(key); ok {
		return v.(*budgetWaitAttrs)
	}
	opts := func(outcome string) []metric.RecordOption {
		return []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(
			attribute.String("budget", budget), attribute.String("class", class), attribute.String("outcome", outcome)))}
	}
	v, _ := in.waits.LoadOrStore(key, &budgetWaitAttrs{granted: opts("granted"), rejected: opts("rejected")})
	return v.(*budgetWaitAttrs)
}

// setsOf returns the attribute sets of the class or group (k = "class" or
// "group") v of budget; in.mu is held.
func (in *BudgetInstruments) setsOf(budget, k, v string) *budgetSets {
	key := [2]string{budget, k + ":" + v}
	if s := in.sets[key]; s != nil {
		return s
	}
	set := func(extra ...attribute.KeyValue) metric.MeasurementOption {
		return metric.WithAttributeSet(attribute.NewSet(append(extra, attribute.String("budget", budget), attribute.String(k, v))...))
	}
	s := &budgetSets{plain: set()}
	if k == "class" {
		for i, kind := range callstats.Kinds {
			s.kinds[i] = set(attribute.String("kind", kind.String()))
		}
		for i, r := range callstats.BudgetReasons {
			s.reasons[i] = set(attribute.String("reason", r))
		}
	}
	in.sets[key] = s
	return s
}

// observe is the callback; the SDK may run it on any goroutine, also
// concurrently with itself (sets is guarded by mu).
func (in *BudgetInstruments) observe(_ context.Context, o metric.Observer) error {
	if in.closed.Load() {
		return nil
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	for _, w := range in.watches {
		name := w.Budget.Name()
		m := w.Budget.Metrics()
		cfg := w.Budget.Config()
		budget := metric.WithAttributeSet(attribute.NewSet(attribute.String("budget", name)))
		o.ObserveInt64(in.size, int64(m.Size), budget)
		o.ObserveInt64(in.available, int64(m.Free), budget)
		o.ObserveInt64(in.maxQueued, int64(m.MaxQueuedCalls), budget)
		o.ObserveInt64(in.partners, int64(m.Partners), budget)
		for _, cm := range m.Classes {
			a := in.setsOf(name, "class", cm.Name)
			o.ObserveInt64(in.inUse, int64(cm.InUse), a.plain)
			o.ObserveInt64(in.queued, int64(cm.Queued), a.plain)
			s := w.Class(cm.Name)
			if s == nil {
				s = &callstats.ClassStats{}
			}
			for i, k := range callstats.Kinds {
				o.ObserveInt64(in.calls, int64(s.Count(k)), a.kinds[i])
			}
			o.ObserveInt64(in.permits, int64(s.Permits.Load()), a.plain)
			for i := range callstats.BudgetReasons {
				o.ObserveInt64(in.rejections, int64(s.Rejections[i].Load()), a.reasons[i])
			}
		}
		for i, gm := range m.Groups {
			a := in.setsOf(name, "group", gm.Name)
			nominal := 0
			if i < len(cfg.Groups) && cfg.Groups[i].Name == gm.Name { // a ChangeConfig between the two reads
				nominal = cfg.Groups[i].Nominal
			}
			o.ObserveInt64(in.groupNominal, int64(nominal), a.plain)
			o.ObserveInt64(in.groupInUse, int64(gm.InUse), a.plain)
			o.ObserveInt64(in.groupQueued, int64(gm.Queued), a.plain)
			o.ObserveInt64(in.groupReserved, int64(gm.Reserved), a.plain)
		}
	}
	return nil
}

func (in *BudgetInstruments) closeWatches() {
	for _, w := range in.watches {
		w.Close()
	}
}

// Close unregisters the callback, so the observed instruments report
// nothing more, and stops counting events and recording the wait
// histogram: an event that reaches the instruments once Close has begun
// (one a budget was publishing when Close ran) is not recorded. It returns
// the error of unregistering. Close is idempotent.
func (in *BudgetInstruments) Close() error {
	in.closed.Store(true)
	in.closeWatches()
	return in.reg.Unregister()
}
