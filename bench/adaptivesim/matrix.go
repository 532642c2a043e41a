package adaptivesim

import (
	"fmt"
	"math"
	"time"
)

// NominalC is the partner's capacity (servers) outside a step or a ramp.
const NominalC = 30

// Length is the virtual duration of one run.
const Length = 30 * time.Second

// Partners are the service-time distributions of the matrix: log-normal
// around 50 ms with σ 0.1, 0.3 and 0.5, a heavy tail (σ 0.3, 0.5 % of the
// calls 8× slower) and two request kinds (80 % around 20 ms, 20 % around
// 200 ms, σ 0.1 each).
func Partners() []Partner {
	ln := func(sigma float64) Partner {
		return Partner{Name: fmt.Sprintf("σ %.1f", sigma), Kinds: []Kind{{Share: 1, Median: 50 * time.Millisecond, Sigma: sigma}}}
	}
	return []Partner{
		ln(0.1), ln(0.3), ln(0.5),
		{Name: "heavy tail", Kinds: []Kind{{Share: 1, Median: 50 * time.Millisecond, Sigma: 0.3, Slow: 0.005, SlowFactor: 8}}},
		{Name: "bimodal", Kinds: []Kind{
			{Share: 0.8, Median: 20 * time.Millisecond, Sigma: 0.1},
			{Share: 0.2, Median: 200 * time.Millisecond, Sigma: 0.1},
		}},
	}
}

// Loads are the offered loads, relative to what NominalC serves.
var Loads = []float64{0.5, 1.0, 1.5}

// Shapes are the capacity over time: steady, a step down 3× and back, a
// ramp from C/3 up to C.
var Shapes = []string{"steady", "step", "ramp"}

// Starts are the initial limits, relative to NominalC.
var Starts = []float64{0.2, 5}

// Cell is one scenario of the matrix, run for several seeds.
type Cell struct {
	Partner Partner
	Load    float64
	Shape   string
	Start   float64
}

// Cells is the whole matrix.
func Cells() []Cell {
	var cs []Cell
	for _, p := range Partners() {
		for _, l := range Loads {
			for _, sh := range Shapes {
				for _, st := range Starts {
					cs = append(cs, Cell{Partner: p, Load: l, Shape: sh, Start: st})
				}
			}
		}
	}
	return cs
}

// String names the cell as the tables show it.
func (c Cell) String() string {
	start := "C/5"
	if c.Start > 1 {
		start = fmt.Sprintf("%.0f×C", c.Start)
	}
	return fmt.Sprintf("%s, load %.1f×, %s, start %s", c.Partner.Name, c.Load, c.Shape, start)
}

// Band is the goal's tolerance around C: ±15 % for one kind of request
// with σ ≤ 0.3, ±25 % otherwise.
func (c Cell) Band() float64 {
	if len(c.Partner.Kinds) == 1 && c.Partner.Kinds[0].Sigma <= 0.3 {
		return 0.15
	}
	return 0.25
}

// Scenario returns the cell's scenario for seed.
func (c Cell) Scenario(seed uint64) Scenario {
	rate := c.Load * NominalC / c.Partner.Mean().Seconds()
	sc := Scenario{Partner: c.Partner, Initial: int(math.Round(c.Start * NominalC)), Seed: seed, Trace: 10 * time.Millisecond,
		Changes: []time.Duration{0}}
	switch c.Shape {
	case "steady":
		sc.Segments = []Segment{{Until: Length, Capacity: NominalC, Rate: rate}}
	case "step":
		third := Length / 3
		sc.Segments = []Segment{
			{Until: third, Capacity: NominalC, Rate: rate},
			{Until: 2 * third, Capacity: NominalC / 3, Rate: rate},
			{Until: Length, Capacity: NominalC, Rate: rate},
		}
		sc.Changes = append(sc.Changes, third, 2*third)
	case "ramp":
		// C/3 up to C over the first two thirds, one server at a time,
		// then steady.
		up := 2 * Length / 3
		lo := NominalC / 3
		for k := 0; k <= NominalC-lo; k++ {
			until := time.Duration(float64(up) * float64(k+1) / float64(NominalC-lo+1))
			sc.Segments = append(sc.Segments, Segment{Until: until, Capacity: lo + k, Rate: rate})
		}
		sc.Segments = append(sc.Segments, Segment{Until: Length, Capacity: NominalC, Rate: rate})
	default:
		panic("adaptivesim: unknown shape " + c.Shape)
	}
	return sc
}
