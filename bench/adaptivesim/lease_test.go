package adaptivesim

import (
	"fmt"
	"testing"
	"time"
)

// TestLeaseWiringLearnsWhatTypedCallsLearn: the default algorithm wired
// through a watched keyed registry (adaptive.WatchRegistry, calls made with
// Registry.TryAcquirePermission and given back with Lease.FinishCall, whose
// CallFinished event carries the call's exact duration) learns from the
// same RTTs as typed calls (Bulkhead.TryAcquire, Call.Finish), so on the
// same arrivals it takes the same limits and admits the same calls (the
// bimodal cell from 5×C has timeouts, which reach the watched controller
// through MarkOverload before the Lease's FinishCall: without it, the
// limit there differs from 1.86 s on and goodput is 227/s instead of 396/s). A
// watched keyed path that fell back to matching RTTs with grants, lost a
// timeout's MarkOverload or counted a call twice would take other limits.
func TestLeaseWiringLearnsWhatTypedCallsLearn(t *testing.T) {
	typed, leased := contenderNamed(t, DefaultName), contenderNamed(t, LeaseName)
	// One cell, to keep make test (-race) short: it has a descent from
	// 5×C, timeouts and a step of capacity.
	for _, name := range []string{"bimodal, load 1.5×, step, start 5×C"} {
		c := mustCell(t, name)
		sc := c.Scenario(1)
		a := Simulate(sc, typed.Name, typed.New(sc))
		b := Simulate(sc, leased.Name, leased.New(sc))
		ra := Measure(sc, a, c.Band(), c.Partner.UnloadedP99())
		rb := Measure(sc, b, c.Band(), c.Partner.UnloadedP99())
		t.Logf("%s: typed goodput %.1f/s rejected %d, Lease goodput %.1f/s rejected %d", c, ra.Goodput, ra.Rejected, rb.Goodput, rb.Rejected)
		if len(a.Limits) != len(b.Limits) {
			t.Fatalf("%s: %d limits traced through typed calls, %d through Leases", c, len(a.Limits), len(b.Limits))
		}
		for k := range a.Limits {
			if a.Limits[k] != b.Limits[k] {
				t.Errorf("%s: at %v the limit is %d through typed calls, %d through Leases", c, sc.Trace*time.Duration(k), a.Limits[k], b.Limits[k])
				break
			}
		}
		rb.Name = ra.Name
		if fmt.Sprint(ra) != fmt.Sprint(rb) {
			t.Errorf("%s: typed calls measure %+v, Leases %+v", c, ra, rb)
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
