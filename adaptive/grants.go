package adaptive

import "time"

// grants holds the grant times of the calls in flight through the plain
// bulkhead.Bulkhead methods, oldest first, in a ring that grows to the most
// calls ever in flight and never shrinks (8 bytes per call; no allocation
// per call once grown).
//
// FinishCall carries no identity, so a finishing call is matched with the
// oldest grant: its measured RTT is now − that grant time. Over a window
// the mean of those RTTs is exact whenever calls finish in the order they
// started, and stays exact when they do not as long as the calls that
// overtake each other all finish within the window: the sum of matched
// grant times equals the sum of the true ones. What remains is an error at
// the window's edges, of the order of the service-time spread times the
// number of calls reordered across the edge, divided by the window's
// calls. ReleasePermission (a call that did not run, typically given back
// right after its grant) takes the newest grant instead. See
// TestPlainRTTEstimate* for the measured accuracy.
type grants struct {
	buf  []time.Duration
	head int // index of the oldest
	n    int
}

func (g *grants) push(t time.Duration) {
	if g.n == len(g.buf) {
		grown := make([]time.Duration, max(8, 2*len(g.buf)))
		for i := range g.n {
			grown[i] = g.buf[(g.head+i)%len(g.buf)]
		}
		g.buf, g.head = grown, 0
	}
	g.buf[(g.head+g.n)%len(g.buf)] = t
	g.n++
}

// popOldest removes and returns the oldest grant time; ok is false if
// there is none (more returns than grants seen, which the Semaphore
// rejects anyway).
func (g *grants) popOldest() (t time.Duration, ok bool) {
	if g.n == 0 {
		return 0, false
	}
	t = g.buf[g.head]
	g.head = (g.head + 1) % len(g.buf)
	g.n--
	return t, true
}

// popNewest removes the newest grant time.
func (g *grants) popNewest() {
	if g.n > 0 {
		g.n--
	}
}
