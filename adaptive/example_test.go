package adaptive_test

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/adaptive"
	"github.com/rxbulkhead/bulkhead/testkit"
)

// partner answers in 100 ms while at most capacity calls run, and queues
// the rest: n calls at once take 100 ms × n/capacity.
func partner(n, capacity int) time.Duration {
	return 100 * time.Millisecond * time.Duration(max(n, capacity)) / time.Duration(capacity)
}

// saturate makes windows of calls that use every permit and take what the
// partner needs for them.
func saturate(b *adaptive.Bulkhead, clock *testkit.VirtualClock, capacity, windows int) {
	for range windows {
		var calls []adaptive.Call
		for {
			c, ok := b.TryAcquire()
			if !ok {
				break
			}
			calls = append(calls, c)
		}
		clock.Advance(partner(len(calls), capacity))
		for _, c := range calls {
			c.Finish(nil)
		}
	}
}

func ExampleNew() {
	clock := testkit.NewVirtualClock(time.Unix(0, 0))
	sem, _ := bulkhead.New("walmart", bulkhead.Config{MaxConcurrentCalls: 10}, bulkhead.WithClock(clock))
	b, _ := adaptive.New(sem, adaptive.Config{Min: 2, Max: 200}, adaptive.WithClock(clock))

	saturate(b, clock, 40, 60) // walmart serves 40 calls at once
	fmt.Println("limit while walmart serves 40:", sem.Config().MaxConcurrentCalls)
	saturate(b, clock, 8, 150) // walmart slows down to 8
	fmt.Println("limit while walmart serves 8:", sem.Config().MaxConcurrentCalls)
	// Output:
	// limit while walmart serves 40: 40
	// limit while walmart serves 8: 8
}

func ExampleBulkhead_TryAcquire() {
	sem, _ := bulkhead.New("walmart", bulkhead.Config{MaxConcurrentCalls: 5})
	b, _ := adaptive.New(sem, adaptive.Config{})

	call, ok := b.TryAcquire()
	if !ok {
		fmt.Println("rejected")
		return
	}
	err := sendOrder(context.Background()) // the call the permit protects
	call.Finish(err)                       // measures the RTT; a timeout counts as overload
	fmt.Println("in flight:", b.Stats().InFlight)
	// Output:
	// in flight: 0
}

func sendOrder(context.Context) error { return nil }

func ExampleBulkhead_Acquire() {
	sem, _ := bulkhead.New("walmart", bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Second, MaxQueuedCalls: 10})
	b, _ := adaptive.New(sem, adaptive.Config{})

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	call, err := b.Acquire(ctx) // waits for a permit, up to MaxWaitDuration
	if err != nil {
		fmt.Println(err)
		return
	}
	call.Release() // the call did not run after all: no sample
	fmt.Println("limit:", b.Stats().Limit)
	// Output:
	// limit: 1
}

func ExampleBulkhead_MarkOverload() {
	clock := testkit.NewVirtualClock(time.Unix(0, 0))
	sem, _ := bulkhead.New("walmart", bulkhead.Config{MaxConcurrentCalls: 20}, bulkhead.WithClock(clock))
	b, _ := adaptive.New(sem, adaptive.Config{Algorithm: func() adaptive.Algorithm { return &adaptive.AIMD{} }}, adaptive.WithClock(clock))

	// A caller of the plain bulkhead.Bulkhead methods (as the operators are)
	// reports a timeout before giving the permit back.
	for range 10 {
		b.AcquirePermissionAsync()
		clock.Advance(20 * time.Millisecond)
		b.MarkOverload()
		b.FinishCall()
	}
	fmt.Println("limit after a window with timeouts:", b.Stats().Limit)
	// Output:
	// limit after a window with timeouts: 18
}

func ExampleNewRegistry() {
	reg, _ := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 20})
	partners, _ := adaptive.NewRegistry(reg, adaptive.Config{Min: 5, Max: 200})

	walmart, _ := partners.Get("walmart") // its own limit, its own algorithm
	target, _ := partners.Get("target")
	fmt.Println(walmart.Name(), walmart.Stats().Limit)
	fmt.Println(target.Name(), target.Stats().Limit)
	fmt.Println(len(reg.All()), "semaphores")
	// Output:
	// walmart 20
	// target 20
	// 2 semaphores
}

func ExampleByName() {
	newAlgorithm, ok := adaptive.ByName("gradient2") // as a configuration file names it
	fmt.Println(ok, adaptive.Names())
	cfg := adaptive.Config{Algorithm: newAlgorithm, Min: 5, Max: 200}
	fmt.Println(cfg.Validate())
	// Output:
	// true [aimd vegas gradient2 capacity setpoint hinge]
	// <nil>
}

// Algorithms are plain values; an Algorithm can be driven by hand. Here
// Capacity starts at five times the capacity of a partner that serves 30
// calls at once in 50 ms and queues the rest: it descends until the RTT
// stops falling in proportion, and settles just above 30 (it probes by 5 %
// and cuts back once a queue shows).
func ExampleCapacity() {
	var c adaptive.Capacity
	limit := 150.0
	for range 200 { // windows of 50 calls each
		rtt := time.Duration(float64(50*time.Millisecond) * max(1, limit/30))
		limit = c.Update(limit, adaptive.Sample{RTT: rtt, RTTDev: rtt / 4, N: 50, InFlight: int(limit)})
	}
	fmt.Printf("limit %.0f, no-load RTT %v\n", limit, time.Duration(c.NoLoadRTT()).Round(time.Millisecond))
	// Output:
	// limit 35, no-load RTT 50ms
}

// SetPoint on the same partner with a tenth of the spread (a wide one
// keeps the no-load RTT too uncertain for the set point, and SetPoint is
// then Capacity), from the same start, told how long each window lasted
// (Sample.Elapsed: the calls' rate × the no-load RTT is the partner's busy
// servers). It descends as Capacity does, then holds Target (1.06) × its
// estimate of C, which errs a little high (the no-load RTT's upper bound),
// instead of probing. A Bulkhead uses it through Config.Algorithm.
func ExampleSetPoint() {
	var p adaptive.SetPoint
	limit := 150.0
	for range 200 { // windows of 50 calls each
		held := float64(int(limit))
		rtt := time.Duration(float64(50*time.Millisecond) * max(1, held/30))
		elapsed := time.Duration(50 * float64(rtt) / held) // every permit in use
		limit = p.Update(limit, adaptive.Sample{RTT: rtt, RTTDev: rtt / 10, N: 50, InFlight: int(held), Elapsed: elapsed})
	}
	fmt.Printf("limit %.0f, estimated capacity %.0f\n", limit, p.EstimatedCapacity())
	_ = adaptive.Config{Algorithm: func() adaptive.Algorithm { return &adaptive.SetPoint{} }}
	// Output:
	// limit 33, estimated capacity 31
}

func ExampleAIMD() {
	a := adaptive.AIMD{BackoffRatio: 0.5}
	fmt.Println(a.Update(10, adaptive.Sample{RTT: time.Millisecond, InFlight: 10}))
	fmt.Println(a.Update(11, adaptive.Sample{RTT: time.Millisecond, InFlight: 10, Dropped: true}))
	// Output:
	// 11
	// 5
}

func ExampleVegas() {
	var v adaptive.Vegas
	fmt.Println(v.Update(20, adaptive.Sample{RTT: 100 * time.Millisecond, InFlight: 20})) // learns the no-load RTT
	fmt.Println(v.Update(20, adaptive.Sample{RTT: 100 * time.Millisecond, InFlight: 20})) // no queue: +6
	// Output:
	// 20
	// 26
}

func ExampleGradient2() {
	var g adaptive.Gradient2
	fmt.Printf("%.1f\n", g.Update(20, adaptive.Sample{RTT: 100 * time.Millisecond, InFlight: 20}))
	// Output:
	// 20.8
}

// Watch adapts a semaphore that other code calls directly (an integration
// such as the net/http transport), from the semaphore's events.
func ExampleWatch() {
	clock := testkit.NewVirtualClock(time.Unix(0, 0))
	sem, _ := bulkhead.New("walmart", bulkhead.Config{MaxConcurrentCalls: 10}, bulkhead.WithClock(clock))
	b, _ := adaptive.Watch(sem, adaptive.Config{Algorithm: func() adaptive.Algorithm { return &adaptive.AIMD{} }}, adaptive.WithClock(clock))
	defer b.Stop()

	for range 10 { // the integration uses every permit
		sem.TryAcquirePermission()
	}
	clock.Advance(200 * time.Millisecond)
	for range 10 {
		sem.FinishCall()
	}
	fmt.Println("limit:", sem.Config().MaxConcurrentCalls)
	// Output:
	// limit: 11
}

// WatchRegistry with OnlyConfigured and Configure: only walmart adapts, the
// other partners of the registry keep their static limit.
func ExampleWatchRegistry() {
	reg, _ := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 20})
	partners, _ := adaptive.WatchRegistry(reg, adaptive.Config{}, adaptive.OnlyConfigured())
	defer partners.Stop()
	_, _ = partners.Configure("walmart", adaptive.Config{Min: 2, Max: 100})

	_, err := partners.Get("target")
	fmt.Println(err)
	for _, b := range partners.All() {
		fmt.Println(b.Name(), "adapts")
	}
	// Output:
	// adaptive: partner has no adaptive config: "target"
	// walmart adapts
}

func ExampleRegistry_Configure() {
	reg, _ := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 20})
	partners, _ := adaptive.NewRegistry(reg, adaptive.Config{})
	walmart, _ := partners.Configure("walmart", adaptive.Config{Max: 10}) // its own bounds
	fmt.Println(walmart.Stats().Limit, walmart.Semaphore().Config().MaxConcurrentCalls)
	// Output:
	// 10 10
}

// Hinge driven by hand with per-call samples, as the controller gives them
// with Window.PerCall: a partner that serves 30 calls at once in 50 ms and
// queues the rest, calls at every level up to the limit (a call granted as
// the k-th in flight takes 50 ms × max(1, k/30)), each sample's Elapsed the
// gap since the previous one. From 150 it measures the no-load RTT on a
// probe at half the limit, fits the hinge at 30 and holds Target (1.1) ×
// it. A Bulkhead uses it through Config.Algorithm, with Window.PerCall
// and typed calls (TryAcquire or Acquire, Call.Finish).
func ExampleHinge() {
	var h adaptive.Hinge
	limit := 150.0
	for i := range 40000 {
		held := max(1, int(limit))
		level := 1 + i%held
		noise := 1 + 0.1*math.Sin(float64(i)) // a deterministic spread
		rtt := time.Duration(float64(50*time.Millisecond) * max(1, float64(level)/30) * noise)
		elapsed := 50 * time.Millisecond / time.Duration(min(held, 30)) // the partner's finish rate
		limit = h.Update(limit, adaptive.Sample{RTT: rtt, N: 1, InFlight: level, Elapsed: elapsed, PerCall: true})
	}
	fmt.Printf("limit %.0f, estimated capacity %.0f, no-load RTT %v\n", limit, h.EstimatedCapacity(),
		time.Duration(h.NoLoadRTT()).Round(time.Millisecond))
	_ = adaptive.Config{Algorithm: func() adaptive.Algorithm { return &adaptive.Hinge{} },
		Window: adaptive.Window{PerCall: true}, MaxCutPerSecond: 1}
	// Output:
	// limit 33, estimated capacity 30, no-load RTT 50ms
}
