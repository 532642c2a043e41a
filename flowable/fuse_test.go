package flowable_test

import (
	"errors"
	"slices"
	"sync"
	"testing"

	bulkhead "github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/flowable"
	"github.com/rxbulkhead/bulkhead/testkit"
)

// The tests in this file run the same assertions through both paths of the
// Bulkhead operator: fused (Range, FromSlice, Just deliver straight to the
// subscriber and drive the permit themselves) and foreign (the same source
// behind a wrapper, which the operator subscribes through a Subscriber of
// its own).

// foreign hides the Publisher it wraps from the operator's fusion: its
// method set is Publisher's.
type foreign[T any] struct{ flowable.Publisher[T] }

type pathSource struct {
	name string
	pub  flowable.Publisher[int]
}

// bothPaths returns equivalent sources of 0, 1, ..., n-1 for each path.
func bothPaths(n int) []pathSource {
	return []pathSource{
		{"fused/Range", flowable.Range(0, n)},
		{"fused/FromSlice", flowable.FromSlice(seq(0, n))},
		{"fused/Just", flowable.Just(seq(0, n)...)},
		{"foreign/Range", foreign[int]{flowable.Range(0, n)}},
		{"foreign/FromSlice", foreign[int]{flowable.FromSlice(seq(0, n))}},
	}
}

func TestBothPathsGivePermitBackBeforeOnComplete(t *testing.T) {
	for _, queued := range []bool{false, true} {
		for _, src := range bothPaths(3) {
			t.Run(src.name+map[bool]string{false: "/granted at once", true: "/granted from the queue"}[queued], func(t *testing.T) {
				b := newBulkhead(t, queueing)
				ev := testkit.RecordEvents(t, b)
				if queued {
					b.TryAcquirePermission()
				}
				var got []int
				completions := 0
				flowable.Bulkhead(b, src.pub).Subscribe(flowable.Funcs[int]{
					Next: func(v int) { got = append(got, v) },
					Complete: func() {
						completions++
						if b.Metrics().InFlightCalls != 0 || ev.Count(bulkhead.CallFinished) != 1 {
							t.Error("OnComplete reached the subscriber before the permit went back with OnComplete")
						}
					},
				})
				if queued {
					b.ReleasePermission()
				}
				if !slices.Equal(got, seq(0, 3)) || completions != 1 {
					t.Fatalf("got %v, %d completions", got, completions)
				}
			})
		}
	}
}

func TestBothPathsGivePermitBackBeforeRule39Error(t *testing.T) {
	for _, src := range bothPaths(10) {
		t.Run(src.name, func(t *testing.T) {
			b := newBulkhead(t, queueing)
			ev := testkit.RecordEvents(t, b)
			var sub flowable.Subscription
			var got []int
			var errs []error
			flowable.Bulkhead(b, src.pub).Subscribe(flowable.Funcs[int]{
				Start: func(s flowable.Subscription) { sub = s; s.Request(1) },
				Next:  func(v int) { got = append(got, v) },
				Error: func(err error) {
					errs = append(errs, err)
					if b.Metrics().InFlightCalls != 0 || ev.Count(bulkhead.CallFinished) != 1 {
						t.Error("OnError reached the subscriber before the permit went back with OnComplete")
					}
				},
			})
			sub.Request(0)
			sub.Request(5) // nothing after the terminal signal
			if !slices.Equal(got, []int{0}) || len(errs) != 1 || !errors.Is(errs[0], flowable.ErrNonPositiveRequest) {
				t.Fatalf("got %v, errors %v", got, errs)
			}
		})
	}
}

func TestBothPathsWithdrawOnRule39ViolationWhilePending(t *testing.T) {
	for _, src := range bothPaths(10) {
		t.Run(src.name, func(t *testing.T) {
			b := newBulkhead(t, queueing)
			ev := testkit.RecordEvents(t, b)
			b.TryAcquirePermission()
			r := newRecorder[int](t, 2)
			flowable.Bulkhead(b, src.pub).Subscribe(r)
			r.Request(-1)
			b.ReleasePermission() // the acquisition was withdrawn: nobody is granted
			r.Request(3)
			items, err, _ := r.snapshot()
			if len(items) != 0 || !errors.Is(err, flowable.ErrNonPositiveRequest) {
				t.Fatalf("got %v, %v", items, err)
			}
			if ev.Count(bulkhead.CallCancelled) != 1 || ev.Count(bulkhead.CallFinished) != 0 || b.Metrics().InFlightCalls != 0 {
				t.Fatal("the pending acquisition was not withdrawn")
			}
		})
	}
}

func TestBothPathsReleaseRules(t *testing.T) {
	cases := []struct {
		name     string
		queued   bool
		initial  int64 // requested in OnSubscribe
		cancelAt int   // cancel inside OnNext of this element; -1: after the grant, outside
		want     int   // elements delivered
		finished int   // CallFinished events: OnComplete (1) or ReleasePermission (0)
	}{
		{"cancel before any element", false, 0, -1, 0, 0},
		{"cancel before any element after a queued grant", true, 0, -1, 0, 0},
		{"cancel after the first element", false, 1, -1, 1, 1},
		{"cancel after the first element of a queued grant", true, 1, -1, 1, 1},
		// Demand ends with the cancelling element: a Cancel made inside
		// OnNext reaches the source only when the Request being served
		// returns (permit.Subscription's drain loop owns the upstream).
		{"cancel inside the first OnNext", false, 1, 0, 1, 1},
		{"cancel inside a later OnNext", true, 5, 4, 5, 1},
	}
	for _, tc := range cases {
		for _, src := range bothPaths(10) {
			t.Run(src.name+"/"+tc.name, func(t *testing.T) {
				b := newBulkhead(t, queueing)
				ev := testkit.RecordEvents(t, b)
				if tc.queued {
					b.TryAcquirePermission()
				}
				r := newRecorder[int](t, tc.initial)
				r.onNext = func(r *recorder[int], v int) {
					if v == tc.cancelAt {
						r.Cancel()
					}
				}
				flowable.Bulkhead(b, src.pub).Subscribe(r)
				if tc.queued {
					b.ReleasePermission()
				}
				if tc.cancelAt < 0 {
					r.Cancel()
				}
				r.Request(3) // nothing after Cancel
				items, err, completed := r.snapshot()
				if !slices.Equal(items, seq(0, tc.want)) || err != nil || completed {
					t.Fatalf("got %v, %v, completed=%v; want %d elements and no terminal signal", items, err, completed, tc.want)
				}
				if got := ev.Count(bulkhead.CallFinished); got != tc.finished {
					t.Fatalf("CallFinished events %d, want %d", got, tc.finished)
				}
				if b.Metrics().InFlightCalls != 0 {
					t.Fatal("permit not given back after Cancel")
				}
			})
		}
	}
}

func TestBothPathsGivePermitBackWhenOnNextPanics(t *testing.T) {
	cases := []struct {
		name         string
		queued       bool
		requestLater bool // request after the grant instead of in OnSubscribe
		panicAt      int
	}{
		{"granted at once, first element", false, false, 0},
		{"granted from the queue, first element", true, false, 0},
		{"request after the grant, first element", false, true, 0},
		{"granted at once, third element", false, false, 2},
		{"request after the grant, third element", false, true, 2},
	}
	for _, tc := range cases {
		for _, src := range bothPaths(10) {
			t.Run(src.name+"/"+tc.name, func(t *testing.T) {
				b := newBulkhead(t, queueing)
				ev := testkit.RecordEvents(t, b)
				if tc.queued {
					b.TryAcquirePermission()
				}
				var sub flowable.Subscription
				delivered := 0
				s := flowable.Funcs[int]{
					Start: func(s flowable.Subscription) {
						sub = s
						if !tc.requestLater {
							s.Request(flowable.Unbounded)
						}
					},
					Next: func(v int) {
						delivered++
						if v == tc.panicAt {
							panic("subscriber bug")
						}
					},
				}
				func() {
					defer func() {
						if p := recover(); p != "subscriber bug" {
							t.Fatalf("recovered %v, want the subscriber's panic", p)
						}
					}()
					flowable.Bulkhead(b, src.pub).Subscribe(s)
					if tc.queued {
						b.ReleasePermission() // the grant runs the source here
					}
					if tc.requestLater {
						sub.Request(flowable.Unbounded)
					}
				}()
				if b.Metrics().InFlightCalls != 0 || ev.Count(bulkhead.CallFinished) != 1 {
					t.Fatal("permit not given back with OnComplete after a panic in OnNext")
				}
				sub.Request(5)
				if delivered != tc.panicAt+1 {
					t.Fatalf("%d elements delivered, want %d: the source was not cancelled by the panic", delivered, tc.panicAt+1)
				}
			})
		}
	}
}

func TestBothPathsGivePermitBackBeforeOnCompletePanics(t *testing.T) {
	for _, src := range bothPaths(2) {
		t.Run(src.name, func(t *testing.T) {
			b := newBulkhead(t, queueing)
			ev := testkit.RecordEvents(t, b)
			held := -1
			func() {
				defer func() {
					if p := recover(); p != "subscriber bug" {
						t.Fatalf("recovered %v, want the subscriber's panic", p)
					}
				}()
				flowable.Bulkhead(b, src.pub).Subscribe(flowable.Funcs[int]{
					Complete: func() {
						held = b.Metrics().InFlightCalls
						panic("subscriber bug")
					},
				})
			}()
			if held != 0 || ev.Count(bulkhead.CallFinished) != 1 {
				t.Fatalf("%d permits held in OnComplete, %d CallFinished: want 0 and 1", held, ev.Count(bulkhead.CallFinished))
			}
		})
	}
}

func TestBothPathsCompleteEmptySourceOnGrantWithoutDemand(t *testing.T) {
	for _, src := range bothPaths(0) {
		t.Run(src.name, func(t *testing.T) {
			b := newBulkhead(t, queueing)
			ev := testkit.RecordEvents(t, b)
			b.TryAcquirePermission()
			r := newRecorder[int](t, 0)
			flowable.Bulkhead(b, src.pub).Subscribe(r)
			if _, _, completed := r.snapshot(); completed {
				t.Fatal("completed before the grant")
			}
			b.ReleasePermission()
			if items, err, completed := r.snapshot(); len(items) != 0 || err != nil || !completed {
				t.Fatalf("got %v, %v, completed=%v", items, err, completed)
			}
			if ev.Count(bulkhead.CallFinished) != 1 {
				t.Fatal("permit not given back with OnComplete")
			}
		})
	}
}

func TestBothPathsReplayDemandBufferedWhilePending(t *testing.T) {
	for _, src := range bothPaths(100) {
		t.Run(src.name, func(t *testing.T) {
			b := newBulkhead(t, queueing)
			ev := testkit.RecordEvents(t, b)
			b.TryAcquirePermission()
			r := newRecorder[int](t, 2)
			flowable.Bulkhead(b, src.pub).Subscribe(r)
			r.Request(3)
			if r.count() != 0 {
				t.Fatal("elements before the grant")
			}
			b.ReleasePermission()
			if got := r.count(); got != 5 {
				t.Fatalf("after the grant: %d elements, want 5", got)
			}
			r.Request(4)
			r.Cancel()
			if items, _, _ := r.snapshot(); !slices.Equal(items, seq(0, 9)) {
				t.Fatalf("got %v", items)
			}
			if ev.Count(bulkhead.CallFinished) != 1 {
				t.Fatal("cancel after elements did not give the permit back with OnComplete")
			}
		})
	}
}

// TestBothPathsSurviveGrantRacingRequestsAndCancel grants a queued
// subscription on one goroutine while another requests and cancels, so the
// source emits on either goroutine and the Cancel races the first element.
// Whatever the interleaving: signals are serial and within demand (the
// recorder checks), no permit leaks, and a permit given back with
// OnComplete means the call delivered or terminated.
func TestBothPathsSurviveGrantRacingRequestsAndCancel(t *testing.T) {
	const runs = 1000
	for _, src := range bothPaths(3) {
		t.Run(src.name, func(t *testing.T) {
			for range runs {
				b, err := bulkhead.New("partner", queueing)
				if err != nil {
					t.Fatal(err)
				}
				ev := testkit.RecordEvents(t, b)
				b.TryAcquirePermission()
				r := newRecorder[int](t, 1)
				flowable.Bulkhead(b, src.pub).Subscribe(r)
				var wg sync.WaitGroup
				wg.Add(2)
				go func() { defer wg.Done(); b.ReleasePermission() }()
				go func() {
					defer wg.Done()
					r.Request(1)
					r.Cancel()
				}()
				wg.Wait()
				items, err, completed := r.snapshot()
				if err != nil || len(items) > 2 || !slices.Equal(items, seq(0, len(items))) {
					t.Fatalf("got %v, %v", items, err)
				}
				if len(items) == 0 && !completed && ev.Count(bulkhead.CallFinished) != 0 {
					t.Fatal("permit given back with OnComplete although nothing was delivered")
				}
				if m := b.Metrics(); m.InFlightCalls != 0 || m.QueuedCalls != 0 {
					t.Fatalf("leak: %+v", m)
				}
			}
		})
	}
}

// A subscriber that cancels inside OnNext with unbounded demand must stop a
// synchronous source at once: no further element, no OnComplete (rules 1.8
// and 3.5), and the permit goes back with OnComplete (an element ran).
func TestBothPathsCancelInsideOnNextStopsASynchronousSource(t *testing.T) {
	for _, queued := range []bool{false, true} {
		for _, src := range bothPaths(1000) {
			t.Run(src.name+map[bool]string{false: "/granted at once", true: "/granted from the queue"}[queued], func(t *testing.T) {
				b := newBulkhead(t, queueing)
				ev := testkit.RecordEvents(t, b)
				if queued {
					b.TryAcquirePermission()
				}
				var sub flowable.Subscription
				var got []int
				completed := false
				flowable.Bulkhead(b, src.pub).Subscribe(flowable.Funcs[int]{
					Start: func(s flowable.Subscription) { sub = s; s.Request(flowable.Unbounded) },
					Next: func(v int) {
						got = append(got, v)
						sub.Cancel()
					},
					Complete: func() { completed = true },
				})
				if queued {
					b.ReleasePermission()
				}
				if !slices.Equal(got, []int{0}) || completed {
					t.Fatalf("after Cancel inside the first OnNext: got %d elements (first %v), completed=%v; want exactly [0] and no completion", len(got), got[:min(len(got), 3)], completed)
				}
				if ev.Count(bulkhead.CallFinished) != 1 {
					t.Errorf("the permit of a call that delivered an element must go back with OnComplete")
				}
			})
		}
	}
}
