package tck

import (
	"fmt"
	"math"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/rxbulkhead/bulkhead/flowable"
)

// maxRecorded bounds the signal log kept for failure messages.
const maxRecorded = 24

// runawayLimit is how many elements a probe accepts before it cancels, so
// that an endless publisher given unbounded demand cannot run forever.
const runawayLimit = 1000

// record is what a probe observed. The probe points to its record, never
// the other way round, so that a check can keep the record and let the
// probe be collected (rule 3.13).
type record struct {
	mu         sync.Mutex
	subscribed int
	nexts      int64
	completes  int
	errs       []error
	log        []string // first maxRecorded signals
	violations []string
	demand     int64 // outstanding demand; math.MaxInt64 = unbounded
	requested  int64 // total positive demand (saturating)
	cancelled  bool  // the probe called Cancel
	// afterCancel counts the signals that arrived after the probe's Cancel
	// returned.
	afterCancel int
	maxDepth    int32 // deepest nesting of OnNext seen (rule 3.3)
}

func (r *record) violateLocked(rule Rule, format string, args ...any) {
	r.violations = append(r.violations, fmt.Sprintf("%s: %s", rule.String(), fmt.Sprintf(format, args...)))
}

func (r *record) logLocked(s string) {
	if len(r.log) < maxRecorded {
		r.log = append(r.log, s)
	} else if len(r.log) == maxRecorded {
		r.log = append(r.log, "...")
	}
}

func (r *record) terminatedLocked() bool { return r.completes > 0 || len(r.errs) > 0 }

// snapshot is a copy of a record's counters.
type snapshot struct {
	subscribed  int
	nexts       int64
	completes   int
	errs        []error
	violations  []string
	afterCancel int
	maxDepth    int32
	log         string
}

func (s snapshot) terminated() bool { return s.completes > 0 || len(s.errs) > 0 }

func (s snapshot) signals() int64 {
	return int64(s.subscribed) + s.nexts + int64(s.completes) + int64(len(s.errs))
}

func (r *record) snapshot() snapshot {
	r.mu.Lock()
	defer r.mu.Unlock()
	return snapshot{
		subscribed: r.subscribed, nexts: r.nexts, completes: r.completes,
		errs: append([]error(nil), r.errs...), violations: append([]string(nil), r.violations...),
		afterCancel: r.afterCancel, maxDepth: r.maxDepth, log: "[" + strings.Join(r.log, " ") + "]",
	}
}

// probe is the recording subscriber of the suite. It checks, on every
// signal, the rules a subscriber can see, and records violations in rec.
//
// Hooks run after the signal has been recorded and marked as finished
// (active back to 0), the way a subscriber requests more from its
// OnSubscribe or OnNext; depth still counts them, so a publisher that
// answers a Request made in OnNext by calling OnNext again before
// returning is seen nesting (rule 3.3).
type probe[T any] struct {
	rec    *record
	active atomic.Int32 // signals in progress (rule 1.3)
	depth  atomic.Int32 // nested OnNext calls, hooks included (rule 3.3)
	widen  bool         // yield inside each signal, to make overlaps likely

	mu  sync.Mutex // guards sub
	sub flowable.Subscription

	// onSubscribe and onNext are the subscriber's behaviour. They get the
	// probe as an argument, so that they need not capture it.
	onSubscribe func(p *probe[T])
	onNext      func(p *probe[T], n int64)
}

func newProbe[T any](rec *record) *probe[T] { return &probe[T]{rec: rec} }

func (p *probe[T]) enter(name string) {
	if p.active.Add(1) != 1 {
		p.rec.mu.Lock()
		p.rec.violateLocked(ruleSerialSignals, "%s while another signal was in progress", name)
		p.rec.mu.Unlock()
	}
	if p.widen {
		runtime.Gosched()
	}
}

func (p *probe[T]) leave() { p.active.Add(-1) }

// checkOrderLocked records signals that precede OnSubscribe or follow a
// terminal signal or the probe's Cancel.
func (p *probe[T]) checkOrderLocked(name string) {
	r := p.rec
	switch {
	case r.subscribed == 0:
		r.violateLocked(ruleOnSubscribeFirst, "%s before OnSubscribe", name)
	case r.terminatedLocked():
		r.violateLocked(ruleNothingAfterTerminal, "%s after a terminal signal", name)
	}
	if r.cancelled {
		r.afterCancel++
	}
}

func (p *probe[T]) OnSubscribe(s flowable.Subscription) {
	p.enter("OnSubscribe")
	r := p.rec
	r.mu.Lock()
	r.logLocked("OnSubscribe")
	if s == nil {
		r.violateLocked(ruleNoNilArguments, "OnSubscribe(nil)")
	}
	if r.subscribed > 0 {
		r.violateLocked(ruleOnSubscribeOnce, "OnSubscribe called a second time")
	}
	r.subscribed++
	r.mu.Unlock()
	p.mu.Lock()
	first := p.sub == nil && s != nil
	if first {
		p.sub = s
	}
	p.mu.Unlock()
	p.leave()
	if first && p.onSubscribe != nil {
		p.onSubscribe(p)
	}
}

func (p *probe[T]) OnNext(v T) {
	d := p.depth.Add(1)
	defer p.depth.Add(-1)
	p.enter("OnNext")
	r := p.rec
	r.mu.Lock()
	r.logLocked(fmt.Sprintf("OnNext(%v)", v))
	p.checkOrderLocked(fmt.Sprintf("OnNext(%v)", v))
	switch {
	case r.demand == 0:
		r.violateLocked(ruleDemand, "OnNext(%v) beyond demand: %d requested, %d delivered before it", v, r.requested, r.nexts)
	case r.demand != math.MaxInt64:
		r.demand--
	}
	r.nexts++
	n := r.nexts
	if d > r.maxDepth {
		r.maxDepth = d
		if d > 1 {
			r.violateLocked(ruleBoundedRecursion, "OnNext(%v) called from within OnNext (nesting depth %d, bound 1): Request made in OnNext recursed into OnNext", v, d)
		}
	}
	r.mu.Unlock()
	p.leave()
	if n >= runawayLimit {
		p.Cancel()
		return
	}
	if p.onNext != nil {
		p.onNext(p, n)
	}
}

func (p *probe[T]) OnError(err error) {
	p.enter("OnError")
	defer p.leave()
	r := p.rec
	r.mu.Lock()
	defer r.mu.Unlock()
	r.logLocked(fmt.Sprintf("OnError(%v)", err))
	p.checkOrderLocked("OnError")
	if err == nil {
		r.violateLocked(ruleNoNilArguments, "OnError(nil)")
	}
	r.errs = append(r.errs, err)
}

func (p *probe[T]) OnComplete() {
	p.enter("OnComplete")
	defer p.leave()
	r := p.rec
	r.mu.Lock()
	defer r.mu.Unlock()
	r.logLocked("OnComplete")
	p.checkOrderLocked("OnComplete")
	r.completes++
}

func (p *probe[T]) subscription() flowable.Subscription {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.sub
}

// Request counts n (if positive) as demand, then passes it on: a publisher
// may deliver synchronously from Request.
func (p *probe[T]) Request(n int64) {
	s := p.subscription()
	if s == nil {
		return
	}
	if n > 0 {
		r := p.rec
		r.mu.Lock()
		r.demand = addSat(r.demand, n)
		r.requested = addSat(r.requested, n)
		r.mu.Unlock()
	}
	s.Request(n)
}

// Cancel cancels the subscription; signals that arrive after it returns are
// counted in afterCancel.
func (p *probe[T]) Cancel() {
	s := p.subscription()
	if s == nil {
		return
	}
	s.Cancel()
	p.rec.mu.Lock()
	p.rec.cancelled = true
	p.rec.mu.Unlock()
}

func addSat(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}
