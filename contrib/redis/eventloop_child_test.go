package redis_test

import (
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rxbulkhead/bulkhead"

	rxredis "github.com/rxbulkhead/bulkhead/contrib/redis"
)

// The #1592-style event-loop experiment of bench/eventloop, reduced to what
// the fleet comparison needs: event loops (goroutines draining their task
// queues), closed-loop clients that take their partner's permit
// asynchronously (the grant is posted back to the client's loop), make a
// non-blocking call whose completion is posted back after its latency, and
// give the permit back. Partner 0 slows down ten-fold at slowAt and
// saturates its bulkhead; the measure is the completed calls per second of
// the healthy partners once it is saturated.
const (
	elPartners    = 20
	elPermits     = 10 // per partner, fleet-wide
	elClients     = 4  // per healthy partner
	elSlowClients = 30
	elLatency     = 2 * time.Millisecond
	elThink       = 16 * time.Millisecond
	elMaxWait     = 500 * time.Millisecond
	elSlowFactor  = 10
	elDuration    = 4 * time.Second
	elSlowAt      = time.Second
	elWindowFrom  = 2 * time.Second // SlowAt + 1s: the slow partner is saturated
	elWork        = 2000            // spin iterations per request (about 10µs)
)

func elBulkheadConfig() bulkhead.Config {
	return bulkhead.Config{MaxConcurrentCalls: elPermits, MaxWaitDuration: elMaxWait, MaxQueuedCalls: 1000}
}

// elLoop is one event loop.
type elLoop struct{ tasks chan func() }

func (l *elLoop) post(f func()) { l.tasks <- f }

// elRun runs the clients of this process (client i runs here when i % procs
// == index) from start for elDuration, and returns the healthy partners'
// completed calls in the measurement window.
func elRun(bhs []bulkhead.Bulkhead, index, procs int, start time.Time) int64 {
	loops := make([]*elLoop, runtime.GOMAXPROCS(0))
	var loopsDone sync.WaitGroup
	for i := range loops {
		loops[i] = &elLoop{tasks: make(chan func(), 1<<16)}
		loopsDone.Go(func() {
			for f := range loops[i].tasks {
				f()
			}
		})
	}
	var healthy atomic.Int64
	var active sync.WaitGroup
	var stopping atomic.Bool
	slowSince := start.Add(elSlowAt)
	windowFrom, end := start.Add(elWindowFrom), start.Add(elDuration)
	n := 0
	for pi, bh := range bhs {
		count := elClients
		if pi == 0 {
			count = elSlowClients
		}
		for range count {
			idx := n
			n++
			if idx%procs != index {
				continue
			}
			l := loops[idx%len(loops)]
			c := &elClient{bh: bh, l: l, slow: pi == 0, slowSince: slowSince, windowFrom: windowFrom, healthy: &healthy, stopping: &stopping, active: &active}
			active.Add(1)
			// Spread the clients over one think-and-call period.
			delay := time.Until(start) + time.Duration(idx)*(elThink+elLatency)/time.Duration(elPartners*elClients+elSlowClients)
			time.AfterFunc(delay, func() { l.post(c.request) })
		}
	}
	time.Sleep(time.Until(end))
	stopping.Store(true)
	done := make(chan struct{})
	go func() { active.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		fmt.Fprintln(os.Stderr, "eventloop: clients did not stop within 10s")
	}
	for _, l := range loops {
		close(l.tasks)
	}
	loopsDone.Wait()
	return healthy.Load()
}

// elClient is one closed-loop client; its methods run on its loop.
type elClient struct {
	bh         bulkhead.Bulkhead
	l          *elLoop
	slow       bool
	slowSince  time.Time
	windowFrom time.Time
	healthy    *atomic.Int64
	stopping   *atomic.Bool
	active     *sync.WaitGroup
}

func (c *elClient) request() {
	if c.stopping.Load() {
		c.active.Done()
		return
	}
	spin(elWork)
	a := c.bh.AcquirePermissionAsync()
	a.OnDone(func(err error) {
		c.l.post(func() {
			if err != nil {
				time.AfterFunc(elThink, func() { c.l.post(c.request) })
				return
			}
			c.call()
		})
	})
}

func (c *elClient) call() {
	lat := elLatency
	if c.slow && time.Now().After(c.slowSince) {
		lat *= elSlowFactor
	}
	time.AfterFunc(lat, func() { c.l.post(c.completed) })
}

func (c *elClient) completed() {
	c.bh.FinishCall()
	if !c.slow && time.Now().After(c.windowFrom) && !c.stopping.Load() {
		c.healthy.Add(1)
	}
	time.AfterFunc(elThink, func() { c.l.post(c.request) })
}

var spinSink atomic.Uint64

func spin(n int) {
	x := uint64(n) | 1
	for range n {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
	}
	spinSink.Store(x)
}

// elRate is the healthy partners' completed calls per second in the window.
func elRate(completed int64) float64 {
	return float64(completed) / (elDuration - elWindowFrom).Seconds()
}

// elSemaphores are the in-process baseline: one Semaphore per partner.
func elSemaphores() ([]bulkhead.Bulkhead, error) {
	var bhs []bulkhead.Bulkhead
	for i := range elPartners {
		s, err := bulkhead.New(fmt.Sprintf("partner-%02d", i), elBulkheadConfig())
		if err != nil {
			return nil, err
		}
		bhs = append(bhs, s)
	}
	return bhs, nil
}

// eventLoopChild runs this process's share of the clients over fleet
// bulkheads.
func eventLoopChild(p childParams) (childResult, error) {
	var res childResult
	c, s, err := childStore(p)
	if err != nil {
		return res, err
	}
	defer c.Close()
	var bhs []bulkhead.Bulkhead
	for i := range elPartners {
		b, err := rxredis.NewBulkhead(s, fmt.Sprintf("partner-%02d", i), rxredis.Config{Config: elBulkheadConfig()})
		if err != nil {
			return res, err
		}
		bhs = append(bhs, b)
	}
	res.Grants = elRun(bhs, p.Index, p.Procs, time.Unix(0, p.Start))
	return res, s.Close()
}
