package tck

import (
	"fmt"
	"math"
	"strings"
	"testing"
)

// The check of the Subscriber rules (section 2 of the specification) that a
// publisher can break: no nil argument (2.13, with 1.9's nil Subscriber).
// Rule 2.12 is checked by the recording subscriber on every signal.

// check2_13 calls Subscribe(nil), which must panic with a message naming
// the rule (1.9 or 2.13), and checks that no nil ever reaches a subscriber.
func check2_13[T any](t *testing.T, r reporter, f Factory[T], o Options) string {
	r.Helper()
	pub := f(t)
	if pub == nil {
		r.Errorf("tck: the factory returned a nil Publisher")
		return ""
	}
	msg, panicked := func() (msg string, panicked bool) {
		defer func() {
			if v := recover(); v != nil {
				msg, panicked = fmt.Sprint(v), true
			}
		}()
		pub.Subscribe(nil)
		return "", false
	}()
	switch {
	case !panicked:
		r.Errorf("%s: Subscribe(nil) returned normally; want a panic naming the rule", ruleNoNilArguments)
	case !strings.Contains(msg, "1.9") && !strings.Contains(msg, "2.13"):
		r.Errorf("%s: Subscribe(nil) panicked with %q, which names neither rule 1.9 nor rule 2.13", ruleNoNilArguments, msg)
	}
	settle()
	rec, p, ok := start(t, r, f, func(p *probe[T]) {
		p.onSubscribe = func(p *probe[T]) { p.Request(math.MaxInt64) }
	})
	if ok {
		settle()
	}
	finish(p)
	requireNoViolations(r, rec, "unbounded demand (no nil Subscription or error may be signalled)")
	return ""
}
