package tck

import (
	"fmt"
	"math"
	"sync"
	"testing"
)

// The checks of the Publisher rules (section 1 of the specification): demand,
// serial signals, terminal signals and what may follow them, onSubscribe first.

// check1_1 requests nothing, then 1, 2 and 3 elements one request at a
// time, and a second subscriber requests 2 from OnSubscribe; the probe
// flags any OnNext beyond demand.
func check1_1[T any](t *testing.T, r reporter, f Factory[T], o Options) string {
	r.Helper()
	rec, p, ok := start(t, r, f, nil)
	if ok {
		settle()
		for _, n := range []int64{1, 2, 3} {
			p.Request(n)
			settle()
		}
	}
	finish(p)
	requireNoViolations(r, rec, "no demand, then Request(1), Request(2), Request(3)")

	rec, p, ok = start(t, r, f, func(p *probe[T]) {
		p.onSubscribe = func(p *probe[T]) { p.Request(2) }
	})
	if ok {
		settle()
	}
	finish(p)
	requireNoViolations(r, rec, "Request(2) from OnSubscribe")
	return ""
}

// check1_3 hammers each subscription with Request(1) from several
// goroutines at once (a grant or an emission on another goroutine races
// them), while the probe yields inside every signal so that overlapping
// signals are likely to be seen.
func check1_3[T any](t *testing.T, r reporter, f Factory[T], o Options) string {
	r.Helper()
	const requesters, perRequester = 4, 8
	for i := range o.iterations() {
		rec, p, ok := start(t, r, f, func(p *probe[T]) { p.widen = true })
		if ok {
			var wg sync.WaitGroup
			for range requesters {
				wg.Go(func() {
					for range perRequester {
						p.Request(1)
					}
				})
			}
			wg.Wait()
			settle()
		}
		finish(p)
		if !requireNoViolations(r, rec, fmt.Sprintf("iteration %d: Request(1) from %d goroutines at once", i, requesters)) {
			break
		}
	}
	return ""
}

// check1_4 requests everything from a failing publisher: it must deliver
// its elements, then OnError.
func check1_4[T any](t *testing.T, r reporter, f Factory[T], o Options) string {
	r.Helper()
	if o.Terminal != Fails && o.Terminal != FailsAtOnce {
		return fmt.Sprintf("the publisher does not fail (Options.Terminal is %v)", o.Terminal)
	}
	rec, p, ok := start(t, r, f, func(p *probe[T]) {
		p.onSubscribe = func(p *probe[T]) { p.Request(math.MaxInt64) }
	})
	if ok {
		settle()
		s := rec.snapshot()
		want := o.expected(o.Elements)
		switch {
		case len(s.errs) != 1 || s.completes != 0:
			r.Errorf("%s: with unbounded demand the publisher signalled %d OnError and %d OnComplete, want exactly one OnError; signals: %s", ruleErrorSignalled, len(s.errs), s.completes, s.log)
		case !matchesErr(o, s.errs[0]):
			r.Errorf("%s: OnError(%v) does not match Options.ErrorIs (%v); signals: %s", ruleErrorSignalled, s.errs[0], o.ErrorIs, s.log)
		case s.nexts != want:
			r.Errorf("%s: %d element(s) before OnError, want %d; signals: %s", ruleErrorSignalled, s.nexts, want, s.log)
		}
	}
	finish(p)
	requireNoViolations(r, rec, "unbounded demand")
	return ""
}

// check1_5 requests everything from a finite publisher: it must deliver
// its elements, then OnComplete.
func check1_5[T any](t *testing.T, r reporter, f Factory[T], o Options) string {
	r.Helper()
	if o.Terminal != Completes {
		return fmt.Sprintf("the publisher does not complete (Options.Terminal is %v)", o.Terminal)
	}
	rec, p, ok := start(t, r, f, func(p *probe[T]) {
		p.onSubscribe = func(p *probe[T]) { p.Request(math.MaxInt64) }
	})
	if ok {
		settle()
		s := rec.snapshot()
		if s.completes != 1 || len(s.errs) != 0 || s.nexts != o.Elements {
			r.Errorf("%s: with unbounded demand the publisher signalled %d element(s), %d OnComplete, %d OnError; want %d, 1, 0; signals: %s",
				ruleCompletionSignalled, s.nexts, s.completes, len(s.errs), o.Elements, s.log)
		}
	}
	finish(p)
	requireNoViolations(r, rec, "unbounded demand")
	return ""
}

// check1_7 drives the publisher to a terminal signal (its own, and the
// OnError of a Request(0)), then requests and cancels: nothing may follow.
func check1_7[T any](t *testing.T, r reporter, f Factory[T], o Options) string {
	r.Helper()
	poke := func(p *probe[T]) {
		p.Request(1)
		p.Request(0)
		p.Request(-1)
		p.Request(math.MaxInt64)
		p.Cancel()
		settle()
	}
	if o.terminates() {
		rec, p, ok := start(t, r, f, func(p *probe[T]) {
			p.onSubscribe = func(p *probe[T]) { p.Request(math.MaxInt64) }
		})
		if ok {
			settle()
			if s := rec.snapshot(); !s.terminated() {
				r.Errorf("%s: with unbounded demand the publisher did not terminate (Options.Terminal is %v); signals: %s", ruleNothingAfterTerminal, o.Terminal, s.log)
			}
			poke(p)
		}
		finish(p)
		requireNoViolations(r, rec, "Request and Cancel after the publisher's own terminal signal")
	}
	rec, p, ok := start(t, r, f, nil)
	if ok {
		settle()
		if !rec.snapshot().terminated() {
			p.Request(0) // rule 3.9 makes it terminate
			settle()
		}
		if rec.snapshot().terminated() {
			poke(p)
		}
	}
	finish(p)
	requireNoViolations(r, rec, "Request and Cancel after the OnError of Request(0)")
	return ""
}

// check1_9 subscribes without demand: OnSubscribe must come first, once;
// a rejecting publisher must signal OnSubscribe then OnError, nothing else.
func check1_9[T any](t *testing.T, r reporter, f Factory[T], o Options) string {
	r.Helper()
	rec, p, ok := start(t, r, f, nil)
	if ok {
		settle()
		s := rec.snapshot()
		if s.subscribed != 1 {
			r.Errorf("%s: OnSubscribe was called %d time(s), want 1; signals: %s", ruleOnSubscribeFirst, s.subscribed, s.log)
		}
		if o.Terminal == FailsAtOnce {
			switch {
			case len(s.errs) != 1 || s.nexts != 0 || s.completes != 0:
				r.Errorf("%s: a rejection must be OnSubscribe then OnError, nothing else; signals: %s", ruleOnSubscribeFirst, s.log)
			case !matchesErr(o, s.errs[0]):
				r.Errorf("%s: the rejection OnError(%v) does not match Options.ErrorIs (%v)", ruleOnSubscribeFirst, s.errs[0], o.ErrorIs)
			}
		}
	}
	finish(p)
	requireNoViolations(r, rec, "subscribed without demand")
	return ""
}
