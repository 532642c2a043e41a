package tck

import (
	"testing"

	"github.com/rxbulkhead/bulkhead/flowable"
)

// Factory makes a fresh Publisher for one check. The suite calls it inside
// the check's testing/synctest bubble with that bubble's *testing.T, so
// whatever it starts belongs to the bubble and whatever it registers with
// t.Cleanup (testkit.CheckPermits, say) runs when the check ends. A
// factory must build everything it needs afresh (a bulkhead included).
type Factory[T any] func(t *testing.T) flowable.Publisher[T]

// Terminal says how a publisher ends.
type Terminal uint8

const (
	// Completes: after Elements elements the publisher signals OnComplete
	// (rule 1.5). It is the zero value.
	Completes Terminal = iota
	// Fails: after Elements elements the publisher signals OnError (rule 1.4).
	Fails
	// FailsAtOnce: the publisher rejects every subscriber: OnSubscribe then
	// OnError, with no element and without waiting for demand (rule 1.9's
	// "reject the Subscriber"). Elements is ignored. An Error source and a
	// bulkhead that rejects are such publishers.
	FailsAtOnce
	// Endless: the publisher never terminates on its own; it emits
	// Elements elements (Infinite: as many as requested) and then nothing.
	Endless
)

// String returns the constant's name.
func (k Terminal) String() string {
	switch k {
	case Completes:
		return "Completes"
	case Fails:
		return "Fails"
	case FailsAtOnce:
		return "FailsAtOnce"
	case Endless:
		return "Endless"
	}
	return "Terminal(?)"
}

// Infinite as Options.Elements means "emits as many elements as
// requested"; the suite then never requests more than it cancels after.
const Infinite int64 = -1

// Options describes the publishers a Factory makes, so that the suite
// knows what to expect of them. The zero Options describes a publisher
// that completes at once without emitting.
type Options struct {
	// Elements is how many elements the publisher emits, when they are
	// requested, before its terminal signal; Infinite for no limit (then
	// Terminal must be Endless). Ignored for FailsAtOnce.
	Elements int64
	// Terminal is how the publisher ends.
	Terminal Terminal
	// ErrorIs, if set, is matched with errors.Is against the error of a
	// publisher that Fails or FailsAtOnce.
	ErrorIs error
	// Iterations is how many times the racy checks (rule 1.3) repeat;
	// zero means 16.
	Iterations int
}

func (o Options) iterations() int {
	if o.Iterations <= 0 {
		return 16
	}
	return o.Iterations
}

// expected returns how many elements a request of total n yields.
func (o Options) expected(n int64) int64 {
	if o.Terminal == FailsAtOnce {
		return 0
	}
	if o.Elements == Infinite || n < o.Elements {
		return n
	}
	return o.Elements
}

func (o Options) terminates() bool { return o.Terminal != Endless }
