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

// hingeConfig is the configuration Hinge's doc comment asks for.
func hingeConfig(h *adaptive.Hinge) adaptive.Config {
	return adaptive.Config{Algorithm: func() adaptive.Algorithm { return h },
		Window: adaptive.Window{PerCall: true}, MaxCutPerSecond: 1}
}

// queuePartner is a deterministic M/G/c partner on a virtual clock: c
// servers and a FIFO queue inside it, calls arriving every 1/rate (with
// seeded exponential gaps), a service time of s × (1 ± spread), callers
// that give up after 10 × s (their queued work is dropped). Calls go
// through an adaptive Bulkhead with TryAcquire and Call.Finish.
type queuePartner struct {
	b      *adaptive.Bulkhead
	clock  *testkit.VirtualClock
	rng    *rand.Rand
	c      int
	s      time.Duration
	spread float64
	rate   float64 // calls per second

	now     time.Duration
	events  eventHeap
	busy    int
	waiting []*pcall
	limits  []int // the limit every 100 ms
}

type pcall struct {
	call    adaptive.Call
	service time.Duration
	ended   bool
}

type event struct {
	at   time.Duration
	kind int // 0 arrival, 1 served, 2 deadline, 3 trace
	c    *pcall
}

type eventHeap []event

func (h eventHeap) Len() int           { return len(h) }
func (h eventHeap) Less(i, j int) bool { return h[i].at < h[j].at }
func (h eventHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *eventHeap) Push(x any)        { *h = append(*h, x.(event)) }
func (h *eventHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

func newQueuePartner(t *testing.T, cfg adaptive.Config, initial, c int, load float64) *queuePartner {
	t.Helper()
	clock := testkit.NewVirtualClock(epoch)
	sem, err := bulkhead.New("partner", bulkhead.Config{MaxConcurrentCalls: initial}, bulkhead.WithClock(clock))
	require.NoError(t, err)
	cfg.Initial = initial
	b, err := adaptive.New(sem, cfg, adaptive.WithClock(clock))
	require.NoError(t, err)
	p := &queuePartner{b: b, clock: clock, rng: rand.New(rand.NewPCG(7, 11)), c: c, s: 50 * ms, spread: 0.2}
	p.rate = load * float64(c) / p.s.Seconds()
	heap.Push(&p.events, event{at: p.gap(), kind: 0})
	heap.Push(&p.events, event{at: 0, kind: 3})
	return p
}

func (p *queuePartner) gap() time.Duration {
	return time.Duration(p.rng.ExpFloat64() / p.rate * float64(time.Second))
}

func (p *queuePartner) start(c *pcall) {
	p.busy++
	heap.Push(&p.events, event{at: p.now + c.service, kind: 1, c: c})
}

// run plays the partner until the virtual time until, then gives up every
// call still in flight (their permits go back).
func (p *queuePartner) run(until time.Duration) {
	for p.events.Len() > 0 && p.events[0].at < until {
		e := heap.Pop(&p.events).(event)
		p.now = e.at
		p.clock.AdvanceTo(epoch.Add(e.at))
		switch e.kind {
		case 0:
			heap.Push(&p.events, event{at: p.now + p.gap(), kind: 0})
			call, ok := p.b.TryAcquire()
			if !ok {
				continue
			}
			f := 1 + p.spread*(2*p.rng.Float64()-1)
			c := &pcall{call: call, service: time.Duration(float64(p.s) * f)}
			heap.Push(&p.events, event{at: p.now + 10*p.s, kind: 2, c: c})
			if p.busy < p.c {
				p.start(c)
			} else {
				p.waiting = append(p.waiting, c)
			}
		case 1:
			p.busy--
			if !e.c.ended {
				e.c.ended = true
				e.c.call.Finish(nil)
			}
			for len(p.waiting) > 0 && p.busy < p.c {
				c := p.waiting[0]
				p.waiting = p.waiting[1:]
				if !c.ended {
					p.start(c)
				}
			}
		case 2:
			if !e.c.ended {
				e.c.ended = true
				e.c.call.Finish(context.DeadlineExceeded)
			}
		case 3:
			p.limits = append(p.limits, p.b.Stats().Limit)
			heap.Push(&p.events, event{at: p.now + 100*ms, kind: 3})
		}
	}
}

// close gives up the calls still in flight.
func (p *queuePartner) close() {
	for _, e := range p.events {
		if e.kind == 2 && !e.c.ended {
			e.c.ended = true
			e.c.call.Release()
		}
	}
}

// meanLimit is the mean limit over the traces from..to (in seconds).
func (p *queuePartner) meanLimit(from, to int) float64 {
	var sum float64
	for _, l := range p.limits[from*10 : to*10] {
		sum += float64(l)
	}
	return sum / float64((to-from)*10)
}

// On a partner of 20 servers loaded at 1.5 × its capacity, Hinge measures
// the no-load RTT and holds Target (1.1) × C, whether it starts at C/5 or
// at 5 × C, and follows C down to 7 and back up.
func TestHingeFindsTheCapacityFromBelowAndFromAbove(t *testing.T) {
	for _, initial := range []int{4, 100} {
		h := &adaptive.Hinge{}
		p := newQueuePartner(t, hingeConfig(h), initial, 20, 1.5)
		p.run(30 * time.Second)
		assert.InDelta(t, 22, p.meanLimit(10, 30), 22*0.15, "from %d: limits %v", initial, p.limits[100:])
		assert.InDelta(t, 20, h.EstimatedCapacity(), 2, "from %d", initial)
		assert.InDelta(t, float64(50*ms), h.NoLoadRTT(), float64(5*ms), "from %d", initial)
		if initial != 4 {
			p.close()
			continue
		}
		p.c = 7
		p.run(60 * time.Second)
		assert.InDelta(t, 7.7, p.meanLimit(40, 60), 7.7*0.25, "after the drop: %v", p.limits[400:])
		p.c = 20
		p.run(90 * time.Second)
		assert.InDelta(t, 22, p.meanLimit(70, 90), 22*0.25, "after the recovery: %v", p.limits[700:])
		p.close()
	}
}

// With windowed samples (PerCall off) Hinge puts each window at its
// InFlight level: it runs, the limit stays within the controller's
// bounds, and it ends up near Target × C (within ±50 %: the levels are the
// windows' peaks).
func TestHingeWithWindowedSamplesRunsAndLeavesTheFloor(t *testing.T) {
	h := &adaptive.Hinge{}
	cfg := hingeConfig(h)
	cfg.Window = adaptive.Window{}
	p := newQueuePartner(t, cfg, 4, 20, 1.5)
	p.run(60 * time.Second)
	for _, l := range p.limits {
		require.True(t, l >= 1 && l <= 1000, "limit %d", l)
	}
	assert.InDelta(t, 22, p.meanLimit(20, 60), 22*0.5, "limits %v", p.limits[200:])
	assert.False(t, math.IsNaN(h.EstimatedCapacity()))
	p.close()
}

// Hostile samples, fed straight to Update: RTTs of 1 ns and of centuries,
// InFlight far beyond any level, no Elapsed or a huge one, every call
// dropped, a limit of NaN or +Inf. Update never panics, always returns a
// finite limit of at least 1, and keeps at most 1001 levels.
func TestHingeSurvivesHostileSamples(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	rtts := []time.Duration{0, 1, 50 * ms, math.MaxInt64 / 2, math.MaxInt64}
	inFlights := []int{math.MinInt, 0, 1, 7, 999, 1000, 1001, math.MaxInt}
	elapsed := []time.Duration{-time.Hour, 0, 1, 250 * ms, math.MaxInt64}
	limits := []float64{math.NaN(), math.Inf(1), math.Inf(-1), 0, 1, 20, 1e300}
	for range 4 {
		h := &adaptive.Hinge{}
		limit := 20.0
		for i := range 5000 {
			s := adaptive.Sample{RTT: rtts[rng.IntN(len(rtts))], N: 1 + rng.IntN(3) - 1, InFlight: inFlights[rng.IntN(len(inFlights))],
				Elapsed: elapsed[rng.IntN(len(elapsed))], PerCall: rng.IntN(2) == 0}
			if rng.IntN(3) == 0 {
				s.Dropped, s.Drops = true, rng.IntN(3)
			}
			if rng.IntN(50) == 0 {
				limit = limits[rng.IntN(len(limits))]
			}
			next := h.Update(limit, s)
			require.False(t, math.IsNaN(next) || math.IsInf(next, 0) || next < 1, "sample %d: %+v at %v gave %v", i, s, limit, next)
			require.LessOrEqual(t, adaptive.HingeLevels(h), 1001)
			limit = next
		}
		require.False(t, math.IsNaN(h.NoLoadRTT()) || math.IsNaN(h.EstimatedCapacity()))
	}
	// all calls dropped, all at the top level
	h := &adaptive.Hinge{}
	limit := 500.0
	for range 10000 {
		limit = h.Update(limit, adaptive.Sample{RTT: 500 * ms, N: 1, InFlight: math.MaxInt, Dropped: true, Drops: 1, Elapsed: 10 * ms, PerCall: true})
		require.False(t, math.IsNaN(limit) || limit < 1)
	}
	assert.Equal(t, 1.0, limit, "every call given up: the limit goes down to 1")
	assert.LessOrEqual(t, adaptive.HingeLevels(h), 1001)
}

// Hinge's doc says why it is not the default: on a partner whose calls all
// slow down together (ExampleNew's: every call of a window takes
// 100 ms × max(n, C)/C), the levels' RTTs are flat, so it sees no queue
// and holds 59 permits once C drops from 40 to 8, where Capacity follows C.
func TestHingesDocSaysWhatItDoesOnAProcessorSharingPartner(t *testing.T) {
	for _, c := range []struct {
		name      string
		cfg       adaptive.Config
		at40, at8 int
	}{
		{"hinge", hingeConfig(&adaptive.Hinge{}), 59, 59},
		{"capacity", adaptive.Config{}, 40, 8},
	} {
		c.cfg.Min, c.cfg.Max = 2, 200
		clock := testkit.NewVirtualClock(epoch)
		sem, err := bulkhead.New("walmart", bulkhead.Config{MaxConcurrentCalls: 10}, bulkhead.WithClock(clock))
		require.NoError(t, err)
		b, err := adaptive.New(sem, c.cfg, adaptive.WithClock(clock))
		require.NoError(t, err)
		saturate(b, clock, 40, 60)
		assert.Equal(t, c.at40, sem.Config().MaxConcurrentCalls, "%s at C = 40", c.name)
		saturate(b, clock, 8, 150)
		assert.Equal(t, c.at8, sem.Config().MaxConcurrentCalls, "%s at C = 8", c.name)
		testkit.CheckPermits(t, b)
	}
}
