package adaptivesim

import (
	"fmt"
	"testing"
	"time"
)

// TestLeaseAndOperatorWiringsLearnWhatTypedCallsLearn: the default
// algorithm wired through a watched keyed registry (adaptive.WatchRegistry,
// calls made with Registry.TryAcquirePermission and given back with
// Lease.FinishCall, whose CallFinished event carries the call's exact
// duration), and through the plain interface as the operators call it
// (StartCall after the grant, FinishCallStarted), learns from the same RTTs
// as typed calls (Bulkhead.TryAcquire, Call.Finish), so on the same
// arrivals it takes the same limits and admits the same calls (the bimodal
// cell from 5×C has timeouts, which reach the watched controller through
// MarkOverload before the Lease's FinishCall: without it, the limit there
// differs from 1.86 s on and goodput is 227/s instead of 396/s). A wiring
// that fell back to matching RTTs with grants, lost a timeout's
// MarkOverload or counted a call twice would take other limits.
func TestLeaseAndOperatorWiringsLearnWhatTypedCallsLearn(t *testing.T) {
	typed := contenderNamed(t, DefaultName)
	// One cell, to keep make test (-race) short: it has a descent from
	// 5×C, timeouts and a step of capacity.
	c := mustCell(t, "bimodal, load 1.5×, step, start 5×C")
	sc := c.Scenario(1)
	a := Simulate(sc, typed.Name, typed.New(sc))
	ra := Measure(sc, a, c.Band(), c.Partner.UnloadedP99())
	for _, name := range []string{LeaseName, DefaultName + " (plain interface)"} {
		other := contenderNamed(t, name)
		b := Simulate(sc, other.Name, other.New(sc))
		rb := Measure(sc, b, c.Band(), c.Partner.UnloadedP99())
		t.Logf("%s: typed goodput %.1f/s rejected %d, %s goodput %.1f/s rejected %d", c, ra.Goodput, ra.Rejected, name, rb.Goodput, rb.Rejected)
		if len(a.Limits) != len(b.Limits) {
			t.Fatalf("%s: %d limits traced through typed calls, %d through %s", c, len(a.Limits), len(b.Limits), name)
		}
		for k := range a.Limits {
			if a.Limits[k] != b.Limits[k] {
				t.Errorf("%s: at %v the limit is %d through typed calls, %d through %s", c, sc.Trace*time.Duration(k), a.Limits[k], b.Limits[k], name)
				break
			}
		}
		rb.Name = ra.Name
		if fmt.Sprint(ra) != fmt.Sprint(rb) {
			t.Errorf("%s: typed calls measure %+v, %s %+v", c, ra, name, rb)
		}
	}
}

// contenderNamed returns the contender called name.
func contenderNamed(t *testing.T, name string) Contender {
	t.Helper()
	for _, c := range Contenders() {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no contender %q", name)
	return Contender{}
}
