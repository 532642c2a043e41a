package prometheus

import (
	"strconv"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/internal/callstats"
)

// BudgetCollector is a prometheus.Collector over one or more hub budgets
// (bulkhead.Budget). Each scrape reports, labelled with the budget's name
// (budget) and, where it applies, the class or the group:
//
//	bulkhead_budget_max_allowed_permits          gauge     configured permits (BudgetConfig.Size)
//	bulkhead_budget_available_permits            gauge     free permits
//	bulkhead_budget_max_queued_calls             gauge     budget-wide queue bound (bulkhead.Unbounded: none)
//	bulkhead_budget_partners                     gauge     partners the budget keeps state for
//	bulkhead_budget_permits_in_use{class}        gauge     permits held by the class's calls
//	bulkhead_budget_queued_calls{class}          gauge     calls of the class waiting in the budget
//	bulkhead_budget_calls_total{class,kind}      counter   events, kind = permitted, rejected,
//	                                                       finished or cancelled
//	bulkhead_budget_granted_permits_total{class} counter   permits granted (the sum of the
//	                                                       granted calls' weights)
//	bulkhead_budget_rejected_calls_total{class,reason}
//	                                             counter   rejections, reason = no_wait, queue_full,
//	                                                       wait_timeout, evicted or too_heavy
//	bulkhead_budget_wait_duration_seconds{class,outcome}
//	                                             histogram time calls waited in the budget
//	                                                       (BudgetEvent.Wait), outcome = granted
//	                                                       or rejected
//	bulkhead_budget_group_nominal_permits{group}  gauge    the group's Nominal share
//	bulkhead_budget_group_permits_in_use{group}   gauge    permits held by the group's partners
//	bulkhead_budget_group_queued_calls{group}     gauge    calls of the group's partners waiting
//	                                                       in the budget
//	bulkhead_budget_group_reserved_permits{group} gauge    the part of the group's reserve
//	                                                       (Nominal - Lendable) it does not use:
//	                                                       kept free for it
//
// The budget's utilisation is sum by (budget)
// (bulkhead_budget_permits_in_use) / bulkhead_budget_max_allowed_permits;
// the mean weight of a class's calls is the rate of
// bulkhead_budget_granted_permits_total over that of its permitted calls.
//
// The wait is the time a call waited for the budget's permits, after its
// partner's (the partner's own wait is in its bulkhead's
// bulkhead_wait_duration_seconds, reported by a Collector over the
// registry): zero for a call granted or rejected at once. The wait
// histogram's buckets are DefaultWaitBuckets unless WithWaitBuckets says
// otherwise; the other options of NewCollector do not apply here.
//
// The partner of a call is not a label: a hub's partners are as many as
// its registry's keys, the classes and groups are few and fixed by the
// configuration (a class is never removed from a live budget; a group
// dropped by ChangeConfig leaves the scrape). Per partner, use the
// Collector of the partners' registry.
//
// A budget, class or group whose name is not valid UTF-8, which Prometheus
// refuses as a label value, is left out of the scrape (a budget with all
// its series), which goes on with the others.
//
// Gauges are read from Budget.Metrics and Budget.Config at each scrape;
// counts and waits come from the budget's events (Budget.OnEvent), from
// NewBudgetCollector on. A BudgetCollector is safe for concurrent use. Its
// listener costs each budget event a lock-free map lookup by class name,
// an atomic add, and for a grant or a rejection a histogram's binary
// search and two atomic adds.
type BudgetCollector struct {
	watches []*callstats.BudgetWatch
	closed  atomic.Bool
	d       budgetDescs
}

type budgetDescs struct {
	size, available, maxQueued, partners, inUse, queued  *prometheus.Desc
	calls, permits, rejections, wait                     *prometheus.Desc
	groupNominal, groupInUse, groupQueued, groupReserved *prometheus.Desc
	waitBounds                                           []float64
}

// NewBudgetCollector returns a BudgetCollector over budgets and starts
// counting their events. Register it with a prometheus.Registerer; call
// Close when it is no longer used. It panics if there is no budget, a
// budget is nil, two budgets share a name (their series would collide), an
// option is nil, or WithWaitBuckets is given bad bounds; the message names
// a nil budget or option by its index.
func NewBudgetCollector(budgets []*bulkhead.Budget, opts ...Option) *BudgetCollector {
	if len(budgets) == 0 {
		panic("bulkhead/contrib/prometheus: NewBudgetCollector called without a budget")
	}
	seen := map[string]bool{}
	for i, b := range budgets {
		if b == nil {
			panic("bulkhead/contrib/prometheus: NewBudgetCollector called with a nil *bulkhead.Budget at index " + strconv.Itoa(i))
		}
		if seen[b.Name()] {
			panic("bulkhead/contrib/prometheus: NewBudgetCollector called with two budgets named " + b.Name())
		}
		seen[b.Name()] = true
	}
	o := newOptions("NewBudgetCollector", opts)
	c := &BudgetCollector{d: newBudgetDescs(o)}
	for _, b := range budgets {
		c.watches = append(c.watches, callstats.NewBudgetWatch(b, o.waitBuckets, nil))
	}
	return c
}

func newBudgetDescs(o options) budgetDescs {
	budget := []string{"budget"}
	class := []string{"budget", "class"}
	group := []string{"budget", "group"}
	d := budgetDescs{
		size: prometheus.NewDesc("bulkhead_budget_max_allowed_permits",
			"Configured number of permits of the budget (BudgetConfig.Size).", budget, nil),
		available: prometheus.NewDesc("bulkhead_budget_available_permits",
			"Number of free permits of the budget.", budget, nil),
		maxQueued: prometheus.NewDesc("bulkhead_budget_max_queued_calls",
			"Configured bound of the calls waiting in the budget, all classes together; bulkhead.Unbounded (MaxInt) means no bound.", budget, nil),
		partners: prometheus.NewDesc("bulkhead_budget_partners",
			"Number of partners the budget keeps state for (BudgetMetrics.Partners); the bulkheads a registry evicts leave it.", budget, nil),
		inUse: prometheus.NewDesc("bulkhead_budget_permits_in_use",
			"Number of permits of the budget held by the calls of the class.", class, nil),
		queued: prometheus.NewDesc("bulkhead_budget_queued_calls",
			"Number of calls of the class waiting in the budget.", class, nil),
		calls: prometheus.NewDesc("bulkhead_budget_calls_total",
			"Calls of the class by kind (permitted, rejected, finished, cancelled), counted since the collector was created.",
			[]string{"budget", "class", "kind"}, nil),
		permits: prometheus.NewDesc("bulkhead_budget_granted_permits_total",
			"Permits granted to the calls of the class: the sum of the granted calls' weights.", class, nil),
		rejections: prometheus.NewDesc("bulkhead_budget_rejected_calls_total",
			"Calls of the class the budget rejected, by reason: no_wait, queue_full, wait_timeout, evicted, too_heavy.",
			[]string{"budget", "class", "reason"}, nil),
		wait: prometheus.NewDesc("bulkhead_budget_wait_duration_seconds",
			"Time calls of the class waited in the budget (after their partner's permit), by outcome: granted or rejected (zero when decided at once).",
			[]string{"budget", "class", "outcome"}, nil),
		groupNominal: prometheus.NewDesc("bulkhead_budget_group_nominal_permits",
			"Configured nominal share of the group (GroupConfig.Nominal).", group, nil),
		groupInUse: prometheus.NewDesc("bulkhead_budget_group_permits_in_use",
			"Number of permits of the budget held by the partners of the group.", group, nil),
		groupQueued: prometheus.NewDesc("bulkhead_budget_group_queued_calls",
			"Number of calls of the group's partners waiting in the budget (after their partner's permit).", group, nil),
		groupReserved: prometheus.NewDesc("bulkhead_budget_group_reserved_permits",
			"Permits kept free for the group: the part of its reserve (Nominal - Lendable) it does not use.", group, nil),
	}
	for _, b := range o.waitBuckets {
		d.waitBounds = append(d.waitBounds, b.Seconds())
	}
	return d
}

// Describe sends the descriptors of the metrics.
func (c *BudgetCollector) Describe(ch chan<- *prometheus.Desc) {
	d := &c.d
	for _, desc := range []*prometheus.Desc{d.size, d.available, d.maxQueued, d.partners, d.inUse, d.queued,
		d.calls, d.permits, d.rejections, d.wait, d.groupNominal, d.groupInUse, d.groupQueued, d.groupReserved} {
		ch <- desc
	}
}

// Collect reports every budget, in the order given to NewBudgetCollector,
// its classes in priority order and its groups in config order, but for
// the names that are not valid UTF-8 (see BudgetCollector). After Close it
// reports the gauges only.
func (c *BudgetCollector) Collect(ch chan<- prometheus.Metric) {
	closed := c.closed.Load()
	d := &c.d
	for _, w := range c.watches {
		b := w.Budget
		name := b.Name()
		if !validLabel(name) {
			continue
		}
		m := b.Metrics()
		cfg := b.Config()
		gauge := func(desc *prometheus.Desc, v int, labels ...string) {
			ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, float64(v), labels...)
		}
		gauge(d.size, m.Size, name)
		gauge(d.available, m.Free, name)
		gauge(d.maxQueued, m.MaxQueuedCalls, name)
		gauge(d.partners, m.Partners, name)
		for _, cm := range m.Classes {
			if !validLabel(cm.Name) {
				continue
			}
			gauge(d.inUse, cm.InUse, name, cm.Name)
			gauge(d.queued, cm.Queued, name, cm.Name)
			if !closed {
				d.collectClass(ch, name, cm.Name, w.Class(cm.Name))
			}
		}
		for i, gm := range m.Groups {
			if !validLabel(gm.Name) {
				continue
			}
			nominal := 0
			if i < len(cfg.Groups) && cfg.Groups[i].Name == gm.Name { // a ChangeConfig between the two reads
				nominal = cfg.Groups[i].Nominal
			}
			gauge(d.groupNominal, nominal, name, gm.Name)
			gauge(d.groupInUse, gm.InUse, name, gm.Name)
			gauge(d.groupQueued, gm.Queued, name, gm.Name)
			gauge(d.groupReserved, gm.Reserved, name, gm.Name)
		}
	}
}

// collectClass sends the counters and histograms of one class from s (all
// zero if s is nil: no event of the class yet).
func (d *budgetDescs) collectClass(ch chan<- prometheus.Metric, budget, class string, s *callstats.ClassStats) {
	if s == nil {
		s = &callstats.ClassStats{}
	}
	for _, k := range callstats.Kinds {
		ch <- prometheus.MustNewConstMetric(d.calls, prometheus.CounterValue, float64(s.Count(k)), budget, class, k.String())
	}
	ch <- prometheus.MustNewConstMetric(d.permits, prometheus.CounterValue, float64(s.Permits.Load()), budget, class)
	for i, r := range callstats.BudgetReasons {
		ch <- prometheus.MustNewConstMetric(d.rejections, prometheus.CounterValue, float64(s.Rejections[i].Load()), budget, class, r)
	}
	ch <- histogram(d.wait, d.waitBounds, &s.Granted, budget, class, "granted")
	ch <- histogram(d.wait, d.waitBounds, &s.Rejected, budget, class, "rejected")
}

// Close stops counting events. Call it after unregistering the
// BudgetCollector; later scrapes report the gauges only. Close is
// idempotent.
func (c *BudgetCollector) Close() {
	c.closed.Store(true)
	for _, w := range c.watches {
		w.Close()
	}
}

var _ prometheus.Collector = (*BudgetCollector)(nil)
