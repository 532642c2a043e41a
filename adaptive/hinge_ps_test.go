package adaptive_test

import (
	"container/heap"
	"context"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/adaptive"
	"github.com/rxbulkhead/bulkhead/testkit"
)

// psPartner is a deterministic processor-sharing partner on a virtual
// clock: every call in is served at once, each of the n calls in
// progressing at min(1, c/n) of full speed, so past c they all slow down
// together. Calls arrive every 1/rate (seeded exponential gaps), need a
// service of s × (1 ± spread) at full speed, and their callers give up
// after 10 × s (their work is dropped). Calls go through an adaptive
// Bulkhead with TryAcquire and Call.Finish.
type psPartner struct {
	b      *adaptive.Bulkhead
	clock  *testkit.VirtualClock
	rng    *rand.Rand
	c      float64
	s      time.Duration
	spread float64
	rate   float64 // calls per second

	now     time.Duration
	arrival time.Duration // the next arrival
	trace   time.Duration // the next trace of the limit
	// v is the service (ns at full speed) each call in has had since the
	// start: a call is done when v reaches its fin
	v      float64
	in     psHeap    // the calls in, by fin
	order  []*psCall // the calls in by arrival (deadline); ended ones linger
	limits []int     // the limit every 100 ms
	// probe, if set, is read every 100 ms into probed
	probe  func() float64
	probed []float64
}

type psCall struct {
	call     adaptive.Call
	fin      float64 // v at which it is done
	deadline time.Duration
	ended    bool
	i        int // index in psHeap
}

type psHeap []*psCall

func (h psHeap) Len() int           { return len(h) }
func (h psHeap) Less(i, j int) bool { return h[i].fin < h[j].fin }
func (h psHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].i, h[j].i = i, j
}
func (h *psHeap) Push(x any) {
	c := x.(*psCall)
	c.i = len(*h)
	*h = append(*h, c)
}
func (h *psHeap) Pop() any {
	old := *h
	c := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return c
}

func newPSPartner(t *testing.T, cfg adaptive.Config, initial, c int, load float64) *psPartner {
	t.Helper()
	clock := testkit.NewVirtualClock(epoch)
	sem, err := bulkhead.New("partner", bulkhead.Config{MaxConcurrentCalls: initial}, bulkhead.WithClock(clock))
	require.NoError(t, err)
	cfg.Initial = initial
	b, err := adaptive.New(sem, cfg, adaptive.WithClock(clock))
	require.NoError(t, err)
	p := &psPartner{b: b, clock: clock, rng: rand.New(rand.NewPCG(7, 11)), c: float64(c), s: 50 * ms, spread: 0.2}
	p.rate = load * p.c / p.s.Seconds()
	p.arrival = p.gap()
	return p
}

func (p *psPartner) gap() time.Duration {
	return time.Duration(p.rng.ExpFloat64() / p.rate * float64(time.Second))
}

// run plays the partner until the virtual time until.
func (p *psPartner) run(until time.Duration) {
	for {
		next := min(p.arrival, p.trace)
		r := math.Min(1, p.c/float64(p.in.Len()))
		if p.in.Len() > 0 {
			next = min(next, p.now+time.Duration(math.Ceil((p.in[0].fin-p.v)/r)))
		}
		for len(p.order) > 0 && p.order[0].ended {
			p.order = p.order[1:]
		}
		if len(p.order) > 0 {
			next = min(next, p.order[0].deadline)
		}
		if next >= until {
			return
		}
		if p.in.Len() > 0 {
			p.v += float64(next-p.now) * r
		}
		p.now = next
		p.clock.AdvanceTo(epoch.Add(next))
		for p.in.Len() > 0 && p.in[0].fin-p.v <= 0.5 {
			c := heap.Pop(&p.in).(*psCall)
			c.ended = true
			c.call.Finish(nil)
		}
		for len(p.order) > 0 && (p.order[0].ended || p.order[0].deadline <= p.now) {
			if c := p.order[0]; !c.ended {
				c.ended = true
				heap.Remove(&p.in, c.i)
				c.call.Finish(context.DeadlineExceeded)
			}
			p.order = p.order[1:]
		}
		if p.arrival == p.now {
			p.arrival = p.now + p.gap()
			if call, ok := p.b.TryAcquire(); ok {
				f := 1 + p.spread*(2*p.rng.Float64()-1)
				c := &psCall{call: call, fin: p.v + float64(p.s)*f, deadline: p.now + 10*p.s}
				heap.Push(&p.in, c)
				p.order = append(p.order, c)
			}
		}
		if p.trace == p.now {
			p.limits = append(p.limits, p.b.Stats().Limit)
			if p.probe != nil {
				p.probed = append(p.probed, p.probe())
			}
			p.trace = p.now + 100*ms
		}
	}
}

// close gives up the calls still in flight.
func (p *psPartner) close() {
	for _, c := range p.in {
		c.call.Release()
	}
	p.in, p.order = nil, nil
}

// meanLimit is the mean limit over the traces from..to (in seconds).
func (p *psPartner) meanLimit(from, to int) float64 {
	var sum float64
	for _, l := range p.limits[from*10 : to*10] {
		sum += float64(l)
	}
	return sum / float64((to-from)*10)
}

// maxProbed is the largest value probe gave from the trace of second from
// on.
func (p *psPartner) maxProbed(from int) float64 {
	var m float64
	for _, v := range p.probed[from*10:] {
		m = max(m, v)
	}
	return m
}

// On a processor-sharing partner (every call in slows down together past
// C), loaded at 1.5 × C = 20 and started at C/5, Hinge holds the limit
// between C and 1.5 × C (where the RTT is at most 1.5 × S) while C steps
// 20 → 7 → 20, and its S stays within 1.5 × the true 50 ms. Without the
// rules for such a partner it held 34.2 at C = 20 and 20.1 at C = 7, and
// its S reached 149 ms; with a first growth of 50 % after a limit set
// from C (the other rules kept), 31.3 and 30.7 at C = 20, S 98 ms.
func TestHingeFollowsAProcessorSharingPartner(t *testing.T) {
	h := &adaptive.Hinge{}
	p := newPSPartner(t, hingeConfig(h), 4, 20, 1.5)
	p.probe = h.NoLoadRTT
	for i, c := range []float64{20, 7, 20} {
		p.c = c
		end := 20 * (i + 1)
		p.run(time.Duration(end) * time.Second)
		l := p.meanLimit(end-12, end)
		assert.True(t, l >= c && l <= 1.5*c, "C = %v: mean limit %.1f, not within [C, 1.5 × C]: %v", c, l, p.limits[(end-12)*10:])
	}
	assert.LessOrEqual(t, p.maxProbed(5), float64(75*ms), "S (ns) every 100 ms: %v", p.probed)
	p.close()
}

// Started far above C on a processor-sharing partner loaded at 2 × C,
// Hinge comes down to between C and 1.5 × C within 15 s. Each of the
// rules for such a partner is needed: without the cap on S outside
// probes, it held 3.15 × C (C = 20) and 8.3 × C (C = 8); without the
// bound a probe that measures nothing puts on S, 2.81 × and 2.35 ×;
// with a first growth of 50 % after a limit set from C, 2.16 × and
// 1.73 ×.
func TestHingeComesDownToAProcessorSharingPartnersCapacity(t *testing.T) {
	for _, c := range []int{20, 8} {
		h := &adaptive.Hinge{}
		p := newPSPartner(t, hingeConfig(h), 100, c, 2)
		p.run(30 * time.Second)
		l := p.meanLimit(15, 30) / float64(c)
		assert.True(t, l >= 1 && l <= 1.5, "C = %d: mean limit %.2f × C, not within [1, 1.5]: %v", c, l, p.limits[150:])
		p.close()
	}
}
