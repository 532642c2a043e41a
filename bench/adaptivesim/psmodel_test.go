package adaptivesim

import (
	"testing"
	"time"
)

// firstK admits the first k calls it sees and rejects every later one.
type firstK struct{ k, admitted int }

func (f *firstK) Advance(time.Duration) {}
func (f *firstK) Try() (any, bool) {
	if f.admitted >= f.k {
		return nil, false
	}
	f.admitted++
	return nil, true
}
func (f *firstK) Done(any, bool) {}
func (f *firstK) Limit() int     { return f.k }

// psScenario is one second of a partner of capacity c, Poisson arrivals at
// rate per second.
func psScenario(p Partner, c int, rate float64, seed uint64) Scenario {
	return Scenario{Partner: p, Segments: []Segment{{Until: time.Second, Capacity: c, Rate: rate}},
		Changes: []time.Duration{0}, Initial: c, Seed: seed, Trace: 10 * time.Millisecond}
}

// admitted returns the calls lim admitted, in order.
func admitted(run Run) []Call {
	var out []Call
	for _, c := range run.Calls {
		if !c.Rejected {
			out = append(out, c)
		}
	}
	return out
}

// near reports whether got is want within the model's rounding (a
// completion is scheduled on the next whole nanosecond).
func near(got, want time.Duration) bool { return got >= want-2 && got <= want+2 }

var fixed50 = Partner{Name: "50 ms", Kinds: []Kind{{Share: 1, Median: 50 * time.Millisecond}}}

// With no more calls in the partner than its capacity, a call takes its
// service time.
func TestPSCallsUpToCapacityTakeTheirServiceTime(t *testing.T) {
	run := SimulatePS(psScenario(fixed50, 3, 100, 1), "static 3", NewStatic(3))
	calls := admitted(run)
	if len(calls) < 20 {
		t.Fatalf("only %d calls admitted", len(calls))
	}
	for _, c := range calls {
		if c.Latency != 0 && !near(c.Latency, 50*time.Millisecond) { // 0: still in at the end
			t.Fatalf("call sent at %v took %v, want 50ms", c.Sent, c.Latency)
		}
	}
}

// Two calls of equal work S on one server, the second sent d after the
// first: the first runs alone for d, then both at half speed, so both
// take 2S − d (both 2S if sent together).
func TestPSTwoCallsShareOneServer(t *testing.T) {
	const s = 50 * time.Millisecond
	run := SimulatePS(psScenario(fixed50, 1, 100, 1), "first 2", &firstK{k: 2})
	calls := admitted(run)
	d := calls[1].Sent - calls[0].Sent
	if d >= s {
		t.Fatalf("the second call is sent %v after the first: pick a seed where they overlap", d)
	}
	for k, c := range calls {
		if c.TimedOut || !near(c.Latency, 2*s-d) {
			t.Fatalf("call %d took %v (timed out %v), want 2S − d = %v", k, c.Latency, c.TimedOut, 2*s-d)
		}
	}
}

// A call whose caller gives up leaves the partner: the call sharing the
// server with it runs alone from then on.
func TestPSGivenUpCallFreesItsShare(t *testing.T) {
	// Half the calls take 10 s and are given up at 100 ms, the others
	// take 100 ms (given up at 1 s).
	p := Partner{Name: "give up", Kinds: []Kind{
		{Share: 0.5, Median: 10 * time.Millisecond, Slow: 1, SlowFactor: 1000},
		{Share: 0.5, Median: 100 * time.Millisecond},
	}}
	for seed := uint64(1); seed <= 100; seed++ {
		calls := admitted(SimulatePS(psScenario(p, 1, 20, seed), "first 2", &firstK{k: 2}))
		overlap := calls[0].Sent + 100*time.Millisecond - calls[1].Sent
		if !calls[0].TimedOut || calls[1].TimedOut || overlap <= 0 {
			continue // not a slow call then a fast one sent before it is given up
		}
		// Half speed while the given-up call is in, full speed after.
		want := 100*time.Millisecond + overlap/2
		if !near(calls[1].Latency, want) {
			t.Fatalf("seed %d: the fast call took %v, want %v (200ms if the given-up call kept its share)", seed, calls[1].Latency, want)
		}
		return
	}
	t.Fatal("no seed sends a slow call then a fast one within 100 ms")
}
