package adaptive

import "time"

// grants holds the grants of the calls in flight through the plain
// bulkhead.Bulkhead methods or watched (Watch), oldest first, in a ring
// that grows to the most calls ever in flight and never shrinks (16 bytes
// per call; no allocation per call once grown). A grant is its time and
// its level: the calls in flight once it was granted, itself included.
//
// FinishCall carries no identity, so a finishing call is matched with the
// oldest grant: its measured RTT is now − that grant time, and its level
// (Sample.InFlight of a per-call sample) that grant's level. Over a window
// the mean of those RTTs is exact whenever calls finish in the order they
// started, and stays exact when they do not as long as the calls that
// overtake each other all finish within the window: the sum of matched
// grant times equals the sum of the true ones. What remains is an error at
// the window's edges, of the order of the service-time spread times the
// number of calls reordered across the edge, divided by the window's
// calls. A call whose finish says when it started (FinishCallStarted, as
// the operators finish; or, watched, a CallFinished event carrying its
// duration d) is matched with the grant nearest to its start, now − d,
// instead (take), which is its own unless two grants were closer together
// than the clock's resolution.
// ReleasePermission (a call that did not run, typically given back right
// after its grant) takes the newest grant. See TestPlainRTTEstimate* and
// TestPlainLevel* for the measured accuracy.
//
// Grants are pushed in the order the controller counts them, which is the
// order of their times but for grants counted concurrently, whose times
// were read before mu was taken: take's search tolerates that (it finds a
// grant near the time asked for, not necessarily the nearest).
type grants struct {
	buf  []grant
	head int // index of the oldest
	n    int
}

// grant is one call's grant: its time on the controller's clock and its
// level.
type grant struct {
	at    time.Duration
	level int
}

func (g *grants) push(at time.Duration, level int) {
	if g.n == len(g.buf) {
		grown := make([]grant, max(8, 2*len(g.buf)))
		for i := range g.n {
			grown[i] = g.buf[(g.head+i)%len(g.buf)]
		}
		g.buf, g.head = grown, 0
	}
	g.buf[(g.head+g.n)%len(g.buf)] = grant{at, level}
	g.n++
}

// at returns the i-th oldest grant.
func (g *grants) at(i int) *grant { return &g.buf[(g.head+i)%len(g.buf)] }

// popOldest removes and returns the oldest grant; ok is false if there is
// none (more returns than grants seen, which the Semaphore rejects
// anyway).
func (g *grants) popOldest() (gr grant, ok bool) {
	if g.n == 0 {
		return grant{}, false
	}
	gr = g.buf[g.head]
	g.head = (g.head + 1) % len(g.buf)
	g.n--
	return gr, true
}

// take removes and returns the grant whose time is nearest to at (the
// oldest of equals); ok is false if there is none. It costs a binary
// search plus a move of the grants older than the one taken, which are
// few when calls finish about in the order they started.
func (g *grants) take(at time.Duration) (gr grant, ok bool) {
	if g.n == 0 {
		return grant{}, false
	}
	i := g.firstAtOrAfter(at)
	if i == g.n || (i > 0 && at-g.at(i-1).at <= g.at(i).at-at) {
		i = g.firstAtOrAfter(g.at(i - 1).at) // the oldest of that time
	}
	gr = *g.at(i)
	for ; i > 0; i-- {
		*g.at(i) = *g.at(i - 1)
	}
	g.head = (g.head + 1) % len(g.buf)
	g.n--
	return gr, true
}

// firstAtOrAfter returns the index of the oldest grant at or after t (n
// if none), by binary search.
func (g *grants) firstAtOrAfter(t time.Duration) int {
	lo, hi := 0, g.n
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if g.at(m).at < t {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// popNewest removes the newest grant.
func (g *grants) popNewest() {
	if g.n > 0 {
		g.n--
	}
}
