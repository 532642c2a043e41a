package main

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// partner is one trading partner: how many documents per second the hub
// sends it, and how long its endpoint takes (a log-normal distribution).
type partner struct {
	name   string
	rate   float64       // documents per second
	median time.Duration // median call latency
	sigma  float64       // log-normal shape: p99 is about median * exp(2.33 sigma)
	slow   bool          // the partner that slows down
}

// latency draws one call latency; factor multiplies it (10 once slow).
func (p *partner) latency(rng *rand.Rand, factor float64) time.Duration {
	d := float64(p.median) * math.Exp(p.sigma*rng.NormFloat64()) * factor
	return time.Duration(min(d, float64(30*time.Second)))
}

// meanLatency is the mean of the log-normal distribution.
func (p *partner) meanLatency() time.Duration {
	return time.Duration(float64(p.median) * math.Exp(p.sigma*p.sigma/2))
}

var bigRetailers = []string{"target", "costco", "kroger", "homedepot", "lowes", "bestbuy", "walgreens", "cvs", "albertsons", "macys"}

// catalog builds n partners from seed. Partner 0 is walmart, the biggest
// (400 documents per second, 20 ms median). The others share healthyRate
// documents per second along a Zipf curve and have medians between 5 and 50 ms, kept
// so that on average a healthy partner uses at most 6 of its permits.
func catalog(n int, seed uint64, healthyRate float64) []*partner {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	ps := []*partner{{name: "walmart", rate: 400, median: 20 * time.Millisecond, sigma: 0.5, slow: true}}
	var h float64
	for i := 1; i < n; i++ {
		h += 1 / math.Pow(float64(i), 0.9)
	}
	for i := 1; i < n; i++ {
		name := fmt.Sprintf("supplier-%03d", i)
		if i <= len(bigRetailers) {
			name = bigRetailers[i-1]
		}
		p := &partner{
			name:   name,
			rate:   healthyRate / h / math.Pow(float64(i), 0.9),
			median: time.Duration(math.Exp(math.Log(5e6) + rng.Float64()*math.Log(10))), // 5..50 ms
			sigma:  0.3 + 0.4*rng.Float64(),
		}
		if busy := p.rate * p.meanLatency().Seconds(); busy > 6 {
			p.median = time.Duration(float64(p.median) * 6 / busy)
		}
		ps = append(ps, p)
	}
	return ps
}
