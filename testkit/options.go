package testkit

import (
	"fmt"
	"math"
	"time"
)

// Option configures a TestSubscriber (NewTestSubscriber) or a step verifier
// (Verify). Each option says which of them it applies to; the others ignore
// it.
type Option interface{ apply(*settings) }

type settings struct {
	initialRequest int64
	clock          *VirtualClock
	timeout        time.Duration
}

func defaultSettings() settings {
	return settings{initialRequest: math.MaxInt64, timeout: DefaultTimeout}
}

type optionFunc func(*settings)

func (f optionFunc) apply(s *settings) { f(s) }

// DefaultTimeout is how long an expectation of a step verifier waits for the
// next signal unless WithTimeout says otherwise. Outside a testing/synctest
// bubble it is real time, spent only when the expectation fails; inside a
// bubble it is the bubble's fake time, so an expected signal that is due
// later than this (a bulkhead wait of a minute, say) needs WithTimeout.
const DefaultTimeout = 5 * time.Second

// InitialRequest sets the demand that a TestSubscriber or a step verifier
// signals as soon as it is subscribed. The default is unbounded
// (math.MaxInt64), as in RxJava's TestSubscriber and Reactor's StepVerifier;
// InitialRequest(0) requests nothing until Request or ThenRequest. It panics
// if n is negative (send an invalid request on purpose with Request).
func InitialRequest(n int64) Option {
	if n < 0 {
		panic(fmt.Sprintf("testkit: InitialRequest(%d): must be >= 0; to test rule 3.9, call Request with the invalid n", n))
	}
	return optionFunc(func(s *settings) { s.initialRequest = n })
}

// VerifierClock makes a step verifier's ExpectNoEvent(d) advance c by d
// instead of sleeping d on the time package's clock. It sets nothing else:
// the bulkhead under test reads c only if it was built with
// bulkhead.WithClock(c). (It is not called WithClock so as not to be taken
// for that option, which gives a bulkhead its clock.) It panics if c is nil.
func VerifierClock(c *VirtualClock) Option {
	if c == nil {
		panic("testkit: VerifierClock called with a nil clock")
	}
	return optionFunc(func(s *settings) { s.clock = c })
}

// WithTimeout sets how long each expectation of a step verifier waits for
// the next signal (default DefaultTimeout). It panics if d <= 0.
func WithTimeout(d time.Duration) Option {
	if d <= 0 {
		panic(fmt.Sprintf("testkit: WithTimeout(%v): must be > 0", d))
	}
	return optionFunc(func(s *settings) { s.timeout = d })
}
