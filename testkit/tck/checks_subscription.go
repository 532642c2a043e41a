package tck

import (
	"fmt"
	"math"
	"runtime"
	"sync"
	"testing"
	"weak"
)

// The checks of the Subscription rules (section 3 of the specification):
// bounded recursion, request and cancel after cancel, demand, bad requests,
// dropping a cancelled subscriber and unbounded demand.

// check3_3 requests one element from OnSubscribe, then one more from each
// OnNext: a publisher that answers by calling OnNext from within OnNext
// recurses without bound.
func check3_3[T any](t *testing.T, r reporter, f Factory[T], o Options) string {
	r.Helper()
	if o.Terminal == FailsAtOnce || (o.Elements != Infinite && o.Elements < 2) {
		return "the publisher emits fewer than 2 elements, so Request from OnNext cannot recurse into OnNext"
	}
	const upTo = 64
	rec, p, ok := start(t, r, f, func(p *probe[T]) {
		p.onSubscribe = func(p *probe[T]) { p.Request(1) }
		p.onNext = func(p *probe[T], n int64) {
			if n < upTo {
				p.Request(1)
			} else {
				p.Cancel()
			}
		}
	})
	if ok {
		settle()
	}
	finish(p)
	requireNoViolations(r, rec, "Request(1) from OnSubscribe and from each OnNext")
	return ""
}

// check3_6 cancels, then requests (positive and non-positive n) right away
// and again once the publisher has settled: no signal may follow, in
// particular no OnError for Request(0).
func check3_6[T any](t *testing.T, r reporter, f Factory[T], o Options) string {
	r.Helper()
	rec, p, ok := start(t, r, f, nil)
	if ok {
		settle()
		p.Request(1)
		settle()
		before := rec.snapshot()
		p.Cancel()
		p.Request(0)
		p.Request(1)
		settle()
		s1 := rec.snapshot()
		for _, err := range s1.errs[len(before.errs):] {
			if isRule39Error(err) {
				r.Errorf("%s: Request(0) after Cancel signalled OnError(%v); signals: %s", ruleRequestAfterCancelIsNoop, err, s1.log)
			}
		}
		p.Request(1)
		p.Request(math.MaxInt64)
		p.Request(0)
		p.Request(-1)
		settle()
		if s2 := rec.snapshot(); s2.signals() != s1.signals() {
			r.Errorf("%s: Request after Cancel caused %d more signal(s); signals: %s", ruleRequestAfterCancelIsNoop, s2.signals()-s1.signals(), s2.log)
		}
	}
	finish(p)
	requireNoViolations(r, rec, "Request after Cancel")
	return ""
}

// check3_7 cancels, then cancels again, sequentially and from two
// goroutines at once: no panic, no signal (a bulkhead would panic on a
// second release of the permit).
func check3_7[T any](t *testing.T, r reporter, f Factory[T], o Options) string {
	r.Helper()
	rec, p, ok := start(t, r, f, nil)
	if ok {
		settle()
		p.Request(1)
		settle()
		cancel := func(which string) {
			defer func() {
				if v := recover(); v != nil {
					r.Errorf("%s: %s Cancel panicked: %v", ruleCancelAfterCancelIsNoop, which, v)
				}
			}()
			p.Cancel()
		}
		cancel("the first")
		settle()
		s1 := rec.snapshot()
		cancel("a second")
		var wg sync.WaitGroup
		for range 2 {
			wg.Go(func() { cancel("a concurrent") })
		}
		wg.Wait()
		settle()
		if s2 := rec.snapshot(); s2.signals() != s1.signals() {
			r.Errorf("%s: Cancel after Cancel caused %d more signal(s); signals: %s", ruleCancelAfterCancelIsNoop, s2.signals()-s1.signals(), s2.log)
		}
	}
	finish(p)
	requireNoViolations(r, rec, "Cancel after Cancel")
	return ""
}

// check3_8 requests 1, 2, then 3 elements and checks that each request is
// honoured in full (up to Options.Elements).
func check3_8[T any](t *testing.T, r reporter, f Factory[T], o Options) string {
	r.Helper()
	if o.Terminal == FailsAtOnce || o.Elements == 0 {
		return "the publisher emits no element"
	}
	rec, p, ok := start(t, r, f, nil)
	if ok {
		settle()
		var total int64
		for _, n := range []int64{1, 2, 3} {
			p.Request(n)
			total += n
			settle()
			s := rec.snapshot()
			if want := o.expected(total); s.nexts != want {
				r.Errorf("%s: after requests totalling %d, %d element(s) delivered, want %d; signals: %s", ruleRequestAddsDemand, total, s.nexts, want, s.log)
				break
			}
		}
	}
	finish(p)
	requireNoViolations(r, rec, "Request(1), Request(2), Request(3)")
	return ""
}

// check3_9 requests 0, -1 and math.MinInt64 (a subscription each), and 0
// after a positive request: each must end in OnError citing rule 3.9.
func check3_9[T any](t *testing.T, r reporter, f Factory[T], o Options) string {
	r.Helper()
	for i, n := range []int64{0, -1, math.MinInt64} {
		rec, p, ok := start(t, r, f, nil)
		if !ok {
			finish(p)
			return ""
		}
		settle()
		if rec.snapshot().terminated() {
			finish(p)
			return "the publisher terminates before any request"
		}
		if i == 0 { // first with outstanding demand, then without
			p.Request(1)
			settle()
			if rec.snapshot().terminated() {
				finish(p)
				rec, p, _ = start(t, r, f, nil)
				settle()
			}
		}
		before := rec.snapshot()
		p.Request(n)
		settle()
		s := rec.snapshot()
		errs := s.errs[len(before.errs):]
		switch {
		case len(errs) != 1:
			r.Errorf("%s: Request(%d) led to %d OnError, want 1; signals: %s", ruleNonPositiveRequestFails, n, len(errs), s.log)
		case !isRule39Error(errs[0]):
			r.Errorf("%s: Request(%d) led to OnError(%v), which neither matches flowable.ErrNonPositiveRequest nor cites rule 3.9", ruleNonPositiveRequestFails, n, errs[0])
		}
		finish(p)
		requireNoViolations(r, rec, fmt.Sprintf("Request(%d)", n))
	}
	return ""
}

// check3_13 cancels a subscription (without demand, and after one element
// was requested), lets go of the subscriber and collects garbage: the
// subscriber must be gone, although the publisher is still alive.
func check3_13[T any](t *testing.T, r reporter, f Factory[T], o Options) string {
	r.Helper()
	for _, demand := range []int64{0, 1} {
		wp, rec, pub, ok := subscribeAndCancel(t, r, f, demand)
		if !ok {
			return ""
		}
		settle()
		runtime.GC()
		runtime.GC()
		if wp.Value() != nil {
			r.Errorf("%s: after Request(%d), Cancel and two garbage collections the subscriber is still reachable: the publisher, or a goroutine, timer or queue it uses, keeps a reference; signals: %s",
				ruleCancelDropsSubscriber, demand, rec.snapshot().log)
		}
		requireNoViolations(r, rec, fmt.Sprintf("Request(%d) then Cancel", demand))
		runtime.KeepAlive(pub)
	}
	return ""
}

// subscribeAndCancel subscribes a probe, requests demand, cancels and
// returns a weak pointer to the probe: no strong reference to it survives
// the call but those the publisher keeps.
//
//go:noinline
func subscribeAndCancel[T any](t *testing.T, r reporter, f Factory[T], demand int64) (weak.Pointer[probe[T]], *record, any, bool) {
	rec := &record{}
	p := newProbe[T](rec)
	pub := f(t)
	if pub == nil {
		r.Errorf("tck: the factory returned a nil Publisher")
		return weak.Pointer[probe[T]]{}, rec, nil, false
	}
	if !subscribe(r, pub, p) {
		return weak.Pointer[probe[T]]{}, rec, pub, false
	}
	settle()
	if demand > 0 {
		p.Request(demand)
		settle()
	}
	p.Cancel()
	return weak.Make(p), rec, pub, true
}

// check3_17 makes the demand overflow (math.MaxInt64 twice, from
// OnSubscribe and later) and sends thousands of Request(1): no error, and
// every element is delivered.
func check3_17[T any](t *testing.T, r reporter, f Factory[T], o Options) string {
	r.Helper()
	scenarios := []struct {
		name string
		sub  func(p *probe[T])
		next func(p *probe[T], n int64)
		then func(p *probe[T])
	}{
		{"Request(MaxInt64) from OnSubscribe and again from the first OnNext", func(p *probe[T]) { p.Request(math.MaxInt64) },
			func(p *probe[T], n int64) {
				if n == 1 {
					p.Request(math.MaxInt64)
				}
			}, nil},
		{"Request(MaxInt64) twice from OnSubscribe", func(p *probe[T]) {
			p.Request(math.MaxInt64)
			p.Request(math.MaxInt64)
		}, nil, nil},
		{"Request(1), then Request(MaxInt64-1) and Request(MaxInt64)", func(p *probe[T]) { p.Request(1) }, nil, func(p *probe[T]) {
			p.Request(math.MaxInt64 - 1)
			p.Request(math.MaxInt64)
		}},
		{"3000 calls of Request(1)", nil, nil, func(p *probe[T]) {
			for range 3000 {
				p.Request(1)
			}
		}},
	}
	for _, sc := range scenarios {
		rec, p, ok := start(t, r, f, func(p *probe[T]) { p.onSubscribe, p.onNext = sc.sub, sc.next })
		if ok {
			settle()
			if sc.then != nil {
				sc.then(p)
				settle()
			}
			s := rec.snapshot()
			for _, err := range s.errs {
				if o.Terminal == Completes || o.Terminal == Endless || isRule39Error(err) {
					r.Errorf("%s: %s: OnError(%v); signals: %s", ruleUnboundedDemand, sc.name, err, s.log)
				}
			}
			total := int64(3000)
			if sc.then == nil || sc.sub != nil {
				total = math.MaxInt64
			}
			if want := o.expected(total); o.Elements != Infinite && s.nexts != want {
				r.Errorf("%s: %s: %d element(s) delivered, want %d; signals: %s", ruleUnboundedDemand, sc.name, s.nexts, want, s.log)
			}
		}
		finish(p)
		requireNoViolations(r, rec, sc.name)
	}
	return ""
}
