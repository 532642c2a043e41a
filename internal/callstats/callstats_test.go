package callstats

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/rxbulkhead/bulkhead"
)

func TestAWaitEqualToABoundCountsInThatBucket(t *testing.T) {
	tab := New([]time.Duration{time.Millisecond, time.Second}, nil)
	for _, d := range []time.Duration{0, time.Millisecond, time.Millisecond + 1, time.Second, time.Hour} {
		tab.Record(bulkhead.Event{Type: bulkhead.CallPermitted, Name: "n", Wait: d})
	}
	count, sum, cum := tab.Get("n").Granted.Snapshot()
	if count != 5 || sum != 2*time.Millisecond+1+time.Second+time.Hour {
		t.Fatalf("count %d sum %v", count, sum)
	}
	if cum[0] != 2 || cum[1] != 4 {
		t.Fatalf("cumulative %v, want [2 4]", cum)
	}
}

func TestRecordCountsEveryKindReasonAndCallDuration(t *testing.T) {
	tab := New(DefaultWaitBuckets, []time.Duration{time.Millisecond, time.Second})
	tab.Record(bulkhead.Event{Type: bulkhead.CallPermitted, Name: "n"})
	tab.Record(bulkhead.Event{Type: bulkhead.CallFinished, Name: "n", CallDuration: 2 * time.Millisecond})
	tab.Record(bulkhead.Event{Type: bulkhead.CallFinished, Name: "n"}) // no duration: not in the histogram
	tab.Record(bulkhead.Event{Type: bulkhead.CallCancelled, Name: "n"})
	for _, r := range Reasons {
		tab.Record(bulkhead.Event{Type: bulkhead.CallRejected, Name: "n", Reason: r})
	}
	tab.Record(bulkhead.Event{Type: bulkhead.CallRejected, Name: "n", Reason: bulkhead.QueueFull})
	tab.Record(bulkhead.Event{Type: bulkhead.CallShadowed, Name: "n"})
	s := tab.Get("n")
	for i, want := range []uint64{1, 2, 1, 1, 1} {
		if got := s.Rejections[i].Load(); got != want {
			t.Errorf("%s: %d, want %d", ReasonLabel(Reasons[i]), got, want)
		}
	}
	for k, want := range map[bulkhead.EventType]uint64{bulkhead.CallPermitted: 1, bulkhead.CallRejected: 6, bulkhead.CallFinished: 2, bulkhead.CallCancelled: 1, bulkhead.CallShadowed: 0} {
		if got := s.Count(k); got != want {
			t.Errorf("%v: %d, want %d", k, got, want)
		}
	}
	if got := s.Shadowed[0].Load(); got != 1 {
		t.Errorf("would_wait: %d, want 1", got)
	}
	count, sum, cum := s.Duration.Snapshot()
	if count != 1 || sum != 2*time.Millisecond || cum[0] != 0 || cum[1] != 1 {
		t.Errorf("durations: count %d sum %v cumulative %v", count, sum, cum)
	}
	tab.Forget("n")
	if tab.Get("n") != nil {
		t.Fatal("Forget kept the entry")
	}
}

func TestATableWithoutBoundsKeepsNoHistogram(t *testing.T) {
	tab := New(nil, nil)
	tab.Record(bulkhead.Event{Type: bulkhead.CallPermitted, Name: "n", Wait: time.Second})
	tab.Record(bulkhead.Event{Type: bulkhead.CallFinished, Name: "n", CallDuration: time.Second})
	s := tab.Get("n")
	if c, _, _ := s.Granted.Snapshot(); c != 0 {
		t.Error("a wait histogram without bounds")
	}
	if c, _, _ := s.Duration.Snapshot(); c != 0 {
		t.Error("a duration histogram without bounds")
	}
	if s.Count(bulkhead.CallFinished) != 1 {
		t.Error("the calls are still counted")
	}
}

// Concurrent first events of a name share one entry; a snapshot taken
// while recording has count == the sum of its buckets.
func TestConcurrentRecordsLoseNoEvent(t *testing.T) {
	tab := New(DefaultWaitBuckets, DefaultDurationBuckets)
	var wg sync.WaitGroup
	const goroutines, each = 8, 2000
	stop := make(chan struct{})
	go func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if s := tab.Get("n"); s != nil {
				count, _, cum := s.Granted.Snapshot()
				if cum[len(cum)-1] > count {
					t.Error("cumulative count above the total")
				}
			}
		}
	}()
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				tab.Record(bulkhead.Event{Type: bulkhead.CallPermitted, Name: "n", Wait: time.Duration(g*i) * time.Microsecond})
			}
		}()
	}
	wg.Wait()
	close(stop)
	if count, _, _ := tab.Get("n").Granted.Snapshot(); count != goroutines*each {
		t.Fatalf("count %d, want %d", count, goroutines*each)
	}
}

func TestNewPanicsOnBadBounds(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("no panic")
		}
	}()
	New(nil, []time.Duration{2, 1})
}

// The cache in front of the map: the events of a name given as one string
// or as copies of it share one Stats; a name forgotten and then recorded
// again as the very same string (a literal, say) counts from zero; many
// names, colliding in the cache, each keep their own counts.
func TestTheNameCacheFindsTheRightStats(t *testing.T) {
	tab := New(nil, nil)
	name := "partner"
	copyOf := func(s string) string { return string([]byte(s)) }
	permit := func(n string) { tab.Record(bulkhead.Event{Type: bulkhead.CallPermitted, Name: n}) }
	permit(name)
	permit(name)
	permit(copyOf(name))
	if got := tab.Get(name).Count(bulkhead.CallPermitted); got != 3 {
		t.Fatalf("permitted %d, want 3", got)
	}
	tab.Forget(name)
	permit(name) // the same string: its cache slot holds the forgotten Stats
	if got := tab.Get(name).Count(bulkhead.CallPermitted); got != 1 {
		t.Fatalf("after Forget: permitted %d, want 1 (from zero)", got)
	}

	const names = 5000
	all := make([]string, names)
	for i := range all {
		all[i] = fmt.Sprintf("key-%d", i)
	}
	for round := range 3 {
		for i, n := range all {
			for range i%3 + 1 {
				permit(n)
			}
			if round == 1 && i%7 == 0 {
				tab.Forget(n)
			}
		}
	}
	for i, n := range all {
		want := uint64(3 * (i%3 + 1))
		if i%7 == 0 {
			want = uint64(i%3 + 1) // forgotten after round 1, counted again in round 2 only
		}
		if got := tab.Get(n).Count(bulkhead.CallPermitted); got != want {
			t.Fatalf("%s: %d, want %d", n, got, want)
		}
	}
}

// Every Reason the core defines is counted under its own label: a
// rejection with a reason the table does not know would vanish from the
// rejections by reason (as the fleet's own rejections did while they
// carried Reason zero).
func TestEveryReasonIsCountedUnderItsOwnLabel(t *testing.T) {
	tab := New(nil, nil)
	labels := map[string]bool{}
	for r := bulkhead.Reason(1); r.String() != fmt.Sprintf("Reason(%d)", uint8(r)); r++ {
		tab.Record(bulkhead.Event{Type: bulkhead.CallRejected, Name: "n", Reason: r})
		if l := ReasonLabel(r); l == "other" || labels[l] {
			t.Errorf("%v has the label %q", r, l)
		} else {
			labels[l] = true
		}
	}
	s := tab.Get("n")
	var sum uint64
	for i := range s.Rejections {
		sum += s.Rejections[i].Load()
	}
	if n := s.Count(bulkhead.CallRejected); sum != n || n != uint64(len(Reasons)) {
		t.Fatalf("%d rejections by reason of %d rejections, %d reasons", sum, n, len(Reasons))
	}
	if got := ReasonLabel(bulkhead.Unavailable); got != "unavailable" {
		t.Errorf("Unavailable is labelled %q", got)
	}
}

// A CallShadowed is counted under what the bulkhead would have done; a
// reason shadow mode never reports is not counted under another's label.
func TestShadowedCallsAreCountedByWhatWouldHaveHappened(t *testing.T) {
	tab := New(nil, nil)
	for _, r := range []bulkhead.Reason{0, bulkhead.NoWait, bulkhead.QueueFull, bulkhead.QueueFull, bulkhead.Evicted, bulkhead.WaitTimeout, bulkhead.Unavailable} {
		tab.Record(bulkhead.Event{Type: bulkhead.CallShadowed, Name: "n", Reason: r})
	}
	s := tab.Get("n")
	got := map[string]uint64{}
	for i := range s.Shadowed {
		got[ShadowLabel(i)] = s.Shadowed[i].Load()
	}
	want := map[string]uint64{"would_wait": 1, "no_wait": 1, "queue_full": 2, "evicted": 1}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("shadowed %v, want %v", got, want)
	}
}
