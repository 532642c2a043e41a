package adaptivesim

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/failsafe-go/failsafe-go/adaptivelimiter"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/adaptive"
	"github.com/rxbulkhead/bulkhead/testkit"
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Static is a bulkhead.Semaphore with a fixed limit and no wait.
type Static struct{ sem *bulkhead.Semaphore }

// NewStatic returns a Static limiter of n permits.
func NewStatic(n int) *Static {
	sem, err := bulkhead.New("partner", bulkhead.Config{MaxConcurrentCalls: n})
	if err != nil {
		panic(err)
	}
	return &Static{sem}
}

func (s *Static) Advance(time.Duration) {}
func (s *Static) Try() (any, bool)      { return nil, s.sem.TryAcquirePermission() }
func (s *Static) Done(any, bool)        { s.sem.FinishCall() }
func (s *Static) Limit() int            { return s.sem.Config().MaxConcurrentCalls }

// API is how a contender of package adaptive is called.
type API int

const (
	// Typed: Bulkhead.TryAcquire and Call.Finish (exact RTTs).
	Typed API = iota
	// Plain: the bulkhead.Bulkhead methods as the operators call them
	// (bulkhead.CallTimer's StartCall right after the grant,
	// FinishCallStarted at the end: exact RTTs), and MarkOverload.
	Plain
	// Matched: the bulkhead.Bulkhead methods as code that calls them itself
	// may (a bare FinishCall: RTTs matched to the oldest grant), and
	// MarkOverload.
	Matched
	// Watched: the *bulkhead.Semaphore itself, as an integration holding
	// it does, with adaptive.Watch learning from its events.
	Watched
)

// Adaptive is an adaptive.Bulkhead on a virtual clock, called through api.
type Adaptive struct {
	b     *adaptive.Bulkhead
	sem   *bulkhead.Semaphore
	clock *testkit.VirtualClock
	api   API
}

// NewAdaptive returns an Adaptive limiter with cfg, starting at initial
// permits.
func NewAdaptive(cfg adaptive.Config, api API, initial int) *Adaptive {
	clock := testkit.NewVirtualClock(epoch)
	cfg.Initial = initial
	sem, err := bulkhead.New("partner", bulkhead.Config{MaxConcurrentCalls: initial}, bulkhead.WithClock(clock))
	if err != nil {
		panic(err)
	}
	wrap := adaptive.New
	if api == Watched {
		wrap = adaptive.Watch
	}
	b, err := wrap(sem, cfg, adaptive.WithClock(clock))
	if err != nil {
		panic(err)
	}
	return &Adaptive{b: b, sem: sem, clock: clock, api: api}
}

// Bulkhead returns the adaptive bulkhead.
func (a *Adaptive) Bulkhead() *adaptive.Bulkhead { return a.b }

func (a *Adaptive) Advance(now time.Duration) { a.clock.AdvanceTo(epoch.Add(now)) }

func (a *Adaptive) Try() (any, bool) {
	switch a.api {
	case Typed:
		c, ok := a.b.TryAcquire()
		return c, ok
	case Watched:
		return nil, a.sem.TryAcquirePermission()
	case Plain:
		if !a.b.AcquirePermissionAsync().Granted() {
			return nil, false
		}
		return a.b.StartCall(), true
	}
	return nil, a.b.AcquirePermissionAsync().Granted()
}

func (a *Adaptive) Done(token any, timedOut bool) {
	switch a.api {
	case Typed:
		var err error
		if timedOut {
			err = context.DeadlineExceeded
		}
		token.(adaptive.Call).Finish(err)
		return
	case Watched:
		if timedOut {
			a.b.MarkOverload()
		}
		a.sem.FinishCall()
		return
	}
	if timedOut {
		a.b.MarkOverload()
	}
	if a.api == Plain {
		a.b.FinishCallStarted(token.(bulkhead.CallStart))
		return
	}
	a.b.FinishCall()
}

func (a *Adaptive) Limit() int { return a.b.Stats().Limit }

// leaseKey is the one partner of a Leased limiter's registry.
const leaseKey = "partner"

// Leased is package adaptive's WatchRegistry over a keyed
// *bulkhead.Registry, called as a keyed integration calls it:
// Registry.TryAcquirePermission returns a Lease, whose FinishCall reports
// the call's exact duration in its CallFinished event (Event.CallDuration),
// and a timeout is marked with the partner's MarkOverload first. It learns
// from events, not from its own methods, so it checks that a watched
// keyed registry learns what typed calls teach (Adaptive with Typed).
type Leased struct {
	reg   *bulkhead.Registry
	ar    *adaptive.Registry
	b     *adaptive.Bulkhead
	clock *testkit.VirtualClock
}

// NewLeased returns a Leased limiter with cfg, starting at initial
// permits; the partner's semaphore and controller exist from the start.
func NewLeased(cfg adaptive.Config, initial int) *Leased {
	clock := testkit.NewVirtualClock(epoch)
	cfg.Initial = initial
	reg, err := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: initial}, bulkhead.WithSemaphoreOptions(bulkhead.WithClock(clock)))
	if err != nil {
		panic(err)
	}
	ar, err := adaptive.WatchRegistry(reg, cfg, adaptive.WithClock(clock))
	if err != nil {
		panic(err)
	}
	b, err := ar.Get(leaseKey)
	if err != nil {
		panic(err)
	}
	return &Leased{reg: reg, ar: ar, b: b, clock: clock}
}

// Bulkhead returns the partner's adaptive bulkhead.
func (l *Leased) Bulkhead() *adaptive.Bulkhead { return l.b }

func (l *Leased) Advance(now time.Duration) { l.clock.AdvanceTo(epoch.Add(now)) }

func (l *Leased) Try() (any, bool) {
	lease, err := l.reg.TryAcquirePermission(leaseKey, bulkhead.CallOptions{})
	if err != nil {
		return nil, false
	}
	return &lease, true
}

func (l *Leased) Done(token any, timedOut bool) {
	if timedOut {
		l.b.MarkOverload()
	}
	token.(*bulkhead.Lease).FinishCall()
}

func (l *Leased) Limit() int { return l.b.Stats().Limit }

// Failsafe is failsafe-go's adaptivelimiter (v0.9.8) with its defaults
// except the limits: floor 1, ceiling 1000 and the initial limit of the
// other contenders, as the controller of package adaptive has. It
// reads time.Now, so it must run inside a testing/synctest bubble, where
// Advance sleeps until the virtual time of the next event.
type Failsafe struct {
	l     adaptivelimiter.AdaptiveLimiter[any]
	start time.Time
}

// NewFailsafe returns the limiter starting at initial; call it inside the
// bubble.
func NewFailsafe(initial int) *Failsafe {
	l := adaptivelimiter.NewBuilder[any]().WithLimits(1, 1000, uint(initial)).Build()
	return &Failsafe{l: l, start: time.Now()}
}

func (f *Failsafe) Advance(now time.Duration) {
	if d := now - time.Since(f.start); d > 0 {
		time.Sleep(d)
	}
}

func (f *Failsafe) Try() (any, bool) {
	p, ok := f.l.TryAcquirePermit()
	return p, ok
}

func (f *Failsafe) Done(token any, timedOut bool) {
	p := token.(adaptivelimiter.Permit)
	if timedOut {
		p.Drop()
		return
	}
	p.Record()
}

func (f *Failsafe) Limit() int { return f.l.Limit() }

// Contender is one limiter of the comparison.
type Contender struct {
	Name string
	// New makes the limiter for sc, starting at sc.Initial; it runs inside
	// a testing/synctest bubble when Bubble is set.
	New    func(sc Scenario) Limiter
	Bubble bool
}

// adaptiveContender is an algorithm of package adaptive through api.
func adaptiveContender(name string, cfg adaptive.Config, api API) Contender {
	return Contender{Name: name, New: func(sc Scenario) Limiter { return NewAdaptive(cfg, api, sc.Initial) }}
}

// Oracle is no limiter one can build: a static limit that knows the
// partner's capacity C at every moment and holds K × C. It shows what the
// goals ask of any limiter: where the oracle misses a goal, no limiter can
// meet it by holding a limit in proportion to C.
type Oracle struct {
	sem *bulkhead.Semaphore
	sc  Scenario
	K   float64
}

// OracleK is the oracle's multiple of C: the middle of the ±15 % band,
// and about what the goodput goal needs at a load of 1.0× (see
// docs/benchmarks.md).
const OracleK = 1.1

// NewOracle returns an oracle holding k × C on sc.
func NewOracle(sc Scenario, k float64) *Oracle {
	sem, err := bulkhead.New("partner", bulkhead.Config{MaxConcurrentCalls: max(1, int(math.Round(k*float64(sc.segment(0).Capacity))))})
	if err != nil {
		panic(err)
	}
	return &Oracle{sem: sem, sc: sc, K: k}
}

func (o *Oracle) Advance(now time.Duration) {
	n := max(1, int(math.Round(o.K*float64(o.sc.segment(now).Capacity))))
	if cfg := o.sem.Config(); cfg.MaxConcurrentCalls != n {
		cfg.MaxConcurrentCalls = n
		if err := o.sem.ChangeConfig(cfg); err != nil {
			panic(err)
		}
	}
}
func (o *Oracle) Try() (any, bool) { return nil, o.sem.TryAcquirePermission() }
func (o *Oracle) Done(any, bool)   { o.sem.FinishCall() }
func (o *Oracle) Limit() int       { return o.sem.Config().MaxConcurrentCalls }

// OracleName is the oracle's contender name.
var OracleName = fmt.Sprintf("oracle (%.1f × C, knows C)", OracleK)

// DefaultName is the contender the goals are checked on: package
// adaptive's default algorithm, through typed calls.
const DefaultName = "capacity"

// LeaseName is the contender of the default algorithm wired through a
// watched keyed registry's Leases (Leased).
const LeaseName = DefaultName + " (watched keyed registry, Lease)"

// The two wirings of the reference algorithms, as Netflix
// concurrency-limits runs them: every call a sample (SimpleLimiter with the
// limit itself), or 1 s windows of at least 10 calls, shorter ones
// discarded (WindowedLimit). Neither has this controller's MaxCutPerSecond.
var (
	perCall        = adaptive.Config{MaxCutPerSecond: 1, Window: adaptive.Window{PerCall: true}}
	netflixWindows = adaptive.Config{MaxCutPerSecond: 1, Window: adaptive.Window{
		MinDuration: time.Second, MaxDuration: time.Second, MinSamples: 10, DiscardShort: true}}
)

// hingeConfig is the configuration adaptive.Hinge's doc comment asks for:
// per-call samples, and no bound on cuts, so that a probe halves the limit
// (under the default 0.5, the dev-only hinge (max cut 0.5), the worst p99
// is 3.96× instead of 1.86× on 20 seeds).
var hingeConfig = adaptive.Config{Algorithm: func() adaptive.Algorithm { return &adaptive.Hinge{} },
	Window: adaptive.Window{PerCall: true}, MaxCutPerSecond: 1}

// Contenders are the limiters of the comparison: the default algorithm of
// package adaptive (typed calls, the plain interface and a watched keyed
// registry's Leases), SetPoint and Hinge (typed calls), the reference
// algorithms in both wirings, and failsafe-go's adaptivelimiter; all start
// at the same limit, with the controller's floor 1 and ceiling 1000.
func Contenders() []Contender {
	cs := []Contender{
		adaptiveContender(DefaultName, adaptive.Config{}, Typed),
		adaptiveContender(DefaultName+" (plain interface)", adaptive.Config{}, Plain),
		{Name: LeaseName, New: func(sc Scenario) Limiter { return NewLeased(adaptive.Config{}, sc.Initial) }},
		adaptiveContender("setpoint", adaptive.Config{Algorithm: func() adaptive.Algorithm { return &adaptive.SetPoint{} }}, Typed),
		adaptiveContender(adaptive.NameHinge, hingeConfig, Typed),
	}
	for _, name := range []string{adaptive.NameAIMD, adaptive.NameVegas, adaptive.NameGradient2} {
		newAlg, _ := adaptive.ByName(name)
		pc, nw := perCall, netflixWindows
		pc.Algorithm, nw.Algorithm = newAlg, newAlg
		cs = append(cs,
			adaptiveContender(name+" (per call)", pc, Typed),
			adaptiveContender(name+" (1 s windows)", nw, Typed))
	}
	return append(cs,
		Contender{Name: "failsafe-go adaptivelimiter v0.9.8", Bubble: true, New: func(sc Scenario) Limiter { return NewFailsafe(sc.Initial) }},
		Contender{Name: OracleName, New: func(sc Scenario) Limiter { return NewOracle(sc, OracleK) }})
}
