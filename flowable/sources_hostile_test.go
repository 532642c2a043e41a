package flowable_test

// The tests in this file try the promises of the package doc and of the
// sources' doc comments the way a hostile subscriber would: breaking rule
// 3.9 from inside OnNext, or cancelling from inside OnNext of a one-element
// source.

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/rxbulkhead/bulkhead/flowable"
)

// Promise (package doc): "Request(n <= 0) ends the subscription with an
// OnError matching ErrNonPositiveRequest (rule 3.9)". A subscriber that
// breaks the rule from inside OnNext, with elements still requested and the
// source about to run out, must get that OnError after the element it is
// handling, not the rest of the elements and an OnComplete.
func TestSynchronousSourceSignalsABadRequestMadeInOnNextInsteadOfCompleting(t *testing.T) {
	sources := []pathSource{
		{"Range", flowable.Range(0, 3)},
		{"FromSlice", flowable.FromSlice(seq(0, 3))},
		{"Just", flowable.Just(seq(0, 3)...)},
	}
	for _, bad := range []int64{0, -1} {
		for _, src := range sources {
			t.Run(fmt.Sprintf("%s/Request(%d)", src.name, bad), func(t *testing.T) {
				r := newRecorder[int](t, 3)
				r.onNext = func(r *recorder[int], v int) {
					if v == 0 {
						r.Request(bad)
					}
				}
				src.pub.Subscribe(r)
				items, err, completed := r.snapshot()
				if !slices.Equal(items, []int{0}) || completed || !errors.Is(err, flowable.ErrNonPositiveRequest) {
					t.Fatalf("Request(%d) inside the first OnNext: got %v, %v, completed=%v; want [0] then the rule 3.9 error", bad, items, err, completed)
				}
				r.Request(1) // nothing after the terminal signal
				if items, _, _ := r.snapshot(); len(items) != 1 {
					t.Fatalf("elements after the rule 3.9 error: %v", items)
				}
			})
		}
	}
}
