package eventloop

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rxbulkhead/bulkhead"
)

// Mode is how a request takes its partner's permit on the loop.
type Mode int

const (
	// Blocking waits on the loop goroutine (AcquirePermission with
	// MaxWaitDuration > 0), as resilience4j's operators did before #1592:
	// every task queued behind it on that loop waits too.
	Blocking Mode = iota
	// FailFast never waits (MaxWaitDuration = 0): a full bulkhead rejects at
	// once and the client tries again at once.
	FailFast
	// Async queues a record with AcquirePermissionAsync; the grant is posted
	// back to the loop. The loop never waits.
	Async
)

// String returns "blocking", "fail-fast" or "async".
func (m Mode) String() string {
	switch m {
	case Blocking:
		return "blocking"
	case FailFast:
		return "fail-fast"
	case Async:
		return "async"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// Config describes one run. The zero value of a field takes the default
// given in its comment (see DefaultConfig).
type Config struct {
	// Mode is how requests take their permits (Blocking is the zero value).
	Mode Mode
	// Slow makes partner 0 slow down by SlowFactor at SlowAt. Without it the
	// run is the baseline.
	Slow bool

	Loops        int           // event loops; default runtime.GOMAXPROCS(0)
	Partners     int           // default 50; partner 0 is the one that slows down
	Permits      int           // per partner; default 20
	Clients      int           // closed-loop clients per healthy partner; default 4
	SlowClients  int           // clients of partner 0; default 60
	Latency      time.Duration // mean call latency (uniform ±50%); default 2ms
	Think        time.Duration // a client's pause after a completed call; default 16ms
	RetryDelay   time.Duration // a client's pause after a rejection; default 0 (at once)
	SlowFactor   int           // default 10
	SlowAt       time.Duration // default Duration/4
	Duration     time.Duration // default 4s
	Bin          time.Duration // width of a throughput sample; default 100ms
	MaxWait      time.Duration // Async: how long a queued call may wait; default 500ms
	BlockingWait time.Duration // Blocking: how long the loop may block; default 50ms
	MaxQueued    int           // Async queue bound; default 1000
	RequestWork  int           // spin iterations to parse and route a request (about 10µs); default 2000
	ResponseWork int           // spin iterations to answer a completed call; default 1000
	RejectWork   int           // spin iterations to answer a rejection; default 400
	Seed         uint64        // latency draws
}

// DefaultConfig returns the configuration used in docs/benchmarks.md.
func DefaultConfig(mode Mode, slow bool) Config {
	c := Config{Mode: mode, Slow: slow}
	c.fill()
	return c
}

func (c *Config) fill() {
	def := func(p *int, v int) {
		if *p == 0 {
			*p = v
		}
	}
	defD := func(p *time.Duration, v time.Duration) {
		if *p == 0 {
			*p = v
		}
	}
	def(&c.Loops, runtime.GOMAXPROCS(0))
	def(&c.Partners, 50)
	def(&c.Permits, 20)
	def(&c.Clients, 4)
	def(&c.SlowClients, 60)
	def(&c.SlowFactor, 10)
	def(&c.MaxQueued, 1000)
	def(&c.RequestWork, 2000)
	def(&c.ResponseWork, 1000)
	def(&c.RejectWork, 400)
	defD(&c.Latency, 2*time.Millisecond)
	defD(&c.Think, 16*time.Millisecond)
	defD(&c.Duration, 4*time.Second)
	defD(&c.SlowAt, c.Duration/4)
	defD(&c.Bin, 100*time.Millisecond)
	defD(&c.MaxWait, 500*time.Millisecond)
	defD(&c.BlockingWait, 50*time.Millisecond)
}

// Sample is what happened during one Bin of a run.
type Sample struct {
	At              time.Duration // start of the bin
	Healthy         int64         // completed calls of healthy partners
	Slow            int64         // completed calls of partner 0
	HealthyRejected int64
	SlowRejected    int64
}

// Result is the outcome of one run.
type Result struct {
	Config  Config
	Samples []Sample
}

// HealthyRate is the healthy partners' completed calls per second over the
// bins from SlowAt plus one second (when the slow partner is saturated) to
// the end of the run.
func (r Result) HealthyRate() float64 {
	from := r.Config.SlowAt + time.Second
	var n int64
	var d time.Duration
	for _, s := range r.Samples {
		if s.At >= from {
			n += s.Healthy
			d += r.Config.Bin
		}
	}
	if d == 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

// Totals sums every sample.
func (r Result) Totals() Sample {
	var t Sample
	for _, s := range r.Samples {
		t.Healthy += s.Healthy
		t.Slow += s.Slow
		t.HealthyRejected += s.HealthyRejected
		t.SlowRejected += s.SlowRejected
	}
	return t
}

// counters are updated from the loops with atomics and read at the end.
type counters struct {
	start time.Time
	bin   time.Duration
	bins  [][4]atomic.Int64 // healthy, slow, healthy rejected, slow rejected
}

func (c *counters) add(now time.Time, kind int) {
	i := int(now.Sub(c.start) / c.bin)
	if i >= 0 && i < len(c.bins) {
		c.bins[i][kind].Add(1)
	}
}

type partner struct {
	bh   *bulkhead.Semaphore
	slow atomic.Bool // set once by the SlowAt timer
}

type run struct {
	cfg      Config
	loops    []*loop
	partners []*partner
	stats    *counters
	stopping atomic.Bool
	clients  sync.WaitGroup // one count per client still active
	ctx      context.Context
}

// client is one closed-loop client bound to a loop; its fields are only
// touched on that loop's goroutine.
type client struct {
	r   *run
	l   *loop
	p   *partner
	idx int
	rng *rand.Rand
}

// Run runs one experiment and returns its samples. It returns an error for
// an invalid configuration. It waits until every call and queued
// acquisition has finished, and leaves no goroutine behind.
func Run(cfg Config) (Result, error) {
	cfg.fill()
	if cfg.Partners < 2 || cfg.Duration < cfg.Bin || cfg.SlowAt >= cfg.Duration {
		return Result{}, fmt.Errorf("eventloop: need Partners >= 2 (got %d), Bin <= Duration (got %v, %v) and SlowAt < Duration (got %v)",
			cfg.Partners, cfg.Bin, cfg.Duration, cfg.SlowAt)
	}
	bcfg := bulkhead.Config{MaxConcurrentCalls: cfg.Permits}
	switch cfg.Mode {
	case Blocking:
		bcfg.MaxWaitDuration, bcfg.MaxQueuedCalls = cfg.BlockingWait, bulkhead.Unbounded
	case Async:
		bcfg.MaxWaitDuration, bcfg.MaxQueuedCalls = cfg.MaxWait, cfg.MaxQueued
	case FailFast:
	default:
		return Result{}, fmt.Errorf("eventloop: unknown mode %d", cfg.Mode)
	}
	reg, err := bulkhead.NewRegistry(bcfg)
	if err != nil {
		return Result{}, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := &run{cfg: cfg, ctx: ctx}
	r.stats = &counters{bin: cfg.Bin, bins: make([][4]atomic.Int64, int(cfg.Duration/cfg.Bin))}
	for i := range cfg.Partners {
		bh, err := reg.Get(fmt.Sprintf("partner-%02d", i))
		if err != nil {
			return Result{}, err
		}
		r.partners = append(r.partners, &partner{bh: bh})
	}
	var loopsDone sync.WaitGroup
	for range cfg.Loops {
		l := newLoop()
		r.loops = append(r.loops, l)
		loopsDone.Go(l.run)
	}
	r.stats.start = time.Now()
	seed := cfg.Seed
	n := 0
	for pi, p := range r.partners {
		count := cfg.Clients
		if pi == 0 {
			count = cfg.SlowClients
		}
		for range count {
			c := &client{r: r, p: p, l: r.loops[n%len(r.loops)], idx: n, rng: rand.New(rand.NewPCG(seed, uint64(n)))}
			n++
			r.clients.Add(1)
			// Clients start spread over one think-and-call period, so the
			// run starts in its steady state rather than with a burst.
			delay := time.Duration(c.rng.Int64N(int64(cfg.Think + cfg.Latency)))
			c.l.post(func() { c.l.schedule(delay, c.request) })
		}
	}
	slowTimer := time.AfterFunc(cfg.SlowAt, func() {
		if cfg.Slow {
			r.partners[0].slow.Store(true)
		}
	})
	// The run ends after Duration: clients finish their current request and
	// stop; blocked loops are released by cancelling ctx.
	time.Sleep(cfg.Duration)
	r.stopping.Store(true)
	cancel()
	r.clients.Wait()
	slowTimer.Stop()
	for _, l := range r.loops {
		l.stop()
	}
	loopsDone.Wait()
	res := Result{Config: cfg, Samples: make([]Sample, len(r.stats.bins))}
	for i := range r.stats.bins {
		b := &r.stats.bins[i]
		res.Samples[i] = Sample{At: time.Duration(i) * cfg.Bin, Healthy: b[0].Load(), Slow: b[1].Load(), HealthyRejected: b[2].Load(), SlowRejected: b[3].Load()}
	}
	for _, p := range r.partners {
		if m := p.bh.Metrics(); m.InFlightCalls != 0 || m.QueuedCalls != 0 {
			return res, fmt.Errorf("eventloop: %s leaked permits: %+v", p.bh.Name(), m)
		}
	}
	return res, nil
}

var sink atomic.Uint64

// spin burns CPU for n iterations: the work a loop does per task.
func spin(n int) {
	x := uint64(n) | 1
	for range n {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
	}
	sink.Store(x)
}

// request runs on the client's loop: parse, take a permit, call.
func (c *client) request() {
	r := c.r
	if r.stopping.Load() {
		r.clients.Done()
		return
	}
	spin(r.cfg.RequestWork)
	bh := c.p.bh
	switch r.cfg.Mode {
	case Blocking:
		if err := bh.AcquirePermission(r.ctx); err != nil {
			c.rejected()
			return
		}
		c.call()
	case FailFast:
		if !bh.TryAcquirePermission() {
			c.rejected()
			return
		}
		c.call()
	case Async:
		a := bh.AcquirePermissionAsync()
		switch err := a.Err(); {
		case err == nil:
			c.call()
		case err != bulkhead.ErrPending:
			c.rejected()
		default:
			// Runs on the goroutine that decides (a release on some loop,
			// or the bulkhead's timer): post the outcome back to our loop.
			a.OnDone(func(err error) {
				c.l.post(func() {
					if err != nil {
						c.rejected()
						return
					}
					c.call()
				})
			})
		}
	}
}

// call issues the non-blocking partner call: its completion arrives on
// the loop after the latency, as an I/O completion does.
func (c *client) call() {
	lat := c.r.cfg.Latency/2 + time.Duration(c.rng.Int64N(int64(c.r.cfg.Latency)+1))
	if c.p.slow.Load() {
		lat *= time.Duration(c.r.cfg.SlowFactor)
	}
	c.l.schedule(lat, c.completed)
}

func (c *client) completed() {
	if c.r.stopping.Load() {
		// The loop is about to stop: release and finish quickly.
		c.p.bh.FinishCall()
		c.r.clients.Done()
		return
	}
	spin(c.r.cfg.ResponseWork)
	c.p.bh.FinishCall()
	kind := 0
	if c.p == c.r.partners[0] {
		kind = 1
	}
	c.r.stats.add(time.Now(), kind)
	c.after(c.r.cfg.Think)
}

// after sends the client's next request after d (at once if d is 0); a
// new request arrives on the loop. It runs on the loop.
func (c *client) after(d time.Duration) {
	if d <= 0 {
		c.l.post(c.request)
		return
	}
	c.l.schedule(d, c.request)
}

func (c *client) rejected() {
	spin(c.r.cfg.RejectWork)
	kind := 2
	if c.p == c.r.partners[0] {
		kind = 3
	}
	c.r.stats.add(time.Now(), kind)
	// By default the client tries again at once, as a load generator with
	// a fixed number of connections does: a new request arrives on the loop.
	c.after(c.r.cfg.RetryDelay)
}
