package hubsim

import (
	"math"
	"math/rand/v2"
	"time"
)

// Scenario is one hub and its traffic.
type Scenario struct {
	Partners    int // partners in all
	Interactive int // of which send interactive calls; the others send the batch
	Size        int // the hub's capacity: the budget's size, the pool's units
	PartnerCap  int // every partner's bulkhead (MaxConcurrentCalls)
	// BatchPartnerCap, if not zero, is the batch partners' bulkheads'
	// MaxConcurrentCalls instead of PartnerCap. A call of weight k takes k
	// permits of its partner's bulkhead as of the budget.
	BatchPartnerCap int

	Duration time.Duration // interactive arrivals stop then; the run drains after
	BurstAt  time.Duration // when the batch partners send their documents
	Window   time.Duration // measurement window of the interactive latency, from BurstAt
	// Settle is how long after BurstAt the fairness and utilisation
	// window starts (it ends with the latency window): documents admitted
	// into the idle hub at the burst's first instant, first come, run
	// until then, before anyone competed with them.
	Settle time.Duration

	InteractiveRate   float64       // calls per second per interactive partner
	InteractiveMedian time.Duration // log-normal service time
	InteractiveSigma  float64
	InteractiveWait   time.Duration // MaxWaitDuration of an interactive call, at every level

	BatchDocs    int           // documents per batch partner
	BatchWeights []WeightShare // weight distribution of the documents
	BatchMedian  time.Duration // log-normal service time
	BatchSigma   float64
	BatchWait    time.Duration // MaxWaitDuration of a document, at every level

	// BatchSenders, if not zero, sends each batch partner's documents
	// through that many senders, each sending its next document when the
	// last one ended (a re-send job); zero sends them all at BurstAt.
	BatchSenders int
	// Mixed makes the batch partners send interactive calls too (at the
	// same rate), so that a partner's two kinds of call meet in the budget.
	Mixed bool

	Headroom   int // the interactive class's headroom
	BatchShare int // the batch class's guaranteed share
	MaxBypass  int
}

// WeightShare is one weight of a document and the share of documents that
// have it.
type WeightShare struct {
	Weight int
	Share  float64
}

// Default is the hub of issue 27: 500 partners, a budget of 1,000.
func Default() Scenario {
	return Scenario{
		Partners: 500, Interactive: 450, Size: 1000, PartnerCap: 20,
		Duration: 30 * time.Second, BurstAt: 5 * time.Second, Window: 15 * time.Second, Settle: time.Second,
		InteractiveRate: 20, InteractiveMedian: 40 * time.Millisecond, InteractiveSigma: 0.5, InteractiveWait: time.Second,
		BatchDocs:    400,
		BatchWeights: []WeightShare{{1, 0.4}, {2, 0.3}, {4, 0.2}, {8, 0.1}},
		BatchMedian:  200 * time.Millisecond, BatchSigma: 0.3, BatchWait: time.Minute,
		Headroom: 30, BatchShare: 50, MaxBypass: 100,
	}
}

// Quick is Default over a few virtual seconds, for make test: the same hub
// and loads, a burst whose backlog outlasts a one-second window.
func Quick() Scenario {
	sc := Default()
	sc.Duration, sc.BurstAt, sc.Window, sc.Settle = 2500*time.Millisecond, 500*time.Millisecond, 1500*time.Millisecond, 500*time.Millisecond
	sc.BatchDocs = 50
	return sc
}

// MixedScenario is Default with the batch partners sending interactive calls
// too, and their documents through 10 senders each. A document of weight k
// takes k permits of its partner's bulkhead of 20, so its 10 senders' 26
// permits on average fill it: the partner's interactive calls then wait in
// its bulkhead's FIFO queue behind its documents (what MixedSized remedies).
func MixedScenario() Scenario {
	sc := Default()
	sc.Mixed, sc.BatchSenders = true, 10
	return sc
}

// MixedSized is MixedScenario with the batch partners' bulkheads sized for
// their documents' weights (10 senders × weight 8) plus the interactive
// calls' 20, so that their interactive calls find a permit of their own
// bulkhead and meet their documents in the budget, where the classes
// order them.
func MixedSized() Scenario {
	sc := MixedScenario()
	sc.BatchPartnerCap = sc.BatchSenders*sc.BatchWeights[len(sc.BatchWeights)-1].Weight + sc.PartnerCap
	return sc
}

// senders is the number of partners that send interactive calls.
func (sc Scenario) senders() int {
	if sc.Mixed {
		return sc.Partners
	}
	return sc.Interactive
}

// InteractiveLoad is the permits the interactive traffic holds on average
// (Little's law: rate × mean service time).
func (sc Scenario) InteractiveLoad() float64 {
	mean := float64(sc.InteractiveMedian) * math.Exp(sc.InteractiveSigma*sc.InteractiveSigma/2) / float64(time.Second)
	return float64(sc.senders()) * sc.InteractiveRate * mean
}

// logNormal draws a log-normal duration around median with shape sigma.
func logNormal(rng *rand.Rand, median time.Duration, sigma float64) time.Duration {
	return time.Duration(float64(median) * math.Exp(sigma*rng.NormFloat64()))
}

// weight draws a document's weight.
func (sc Scenario) weight(rng *rand.Rand) int {
	u := rng.Float64()
	for _, w := range sc.BatchWeights {
		if u < w.Share {
			return w.Weight
		}
		u -= w.Share
	}
	return sc.BatchWeights[len(sc.BatchWeights)-1].Weight
}
