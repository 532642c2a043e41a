package adaptive

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// The ring behaves as the slice of grants it stands for, through growth
// and wrap-around: popOldest takes the first, popNewest drops the last,
// take removes the one nearest to the time asked for (the older of two
// as near).
func TestGrantsRingIsTheSliceItStandsFor(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var g grants
	var model []grant
	now := time.Duration(0)
	for step := range 20000 {
		switch op := rng.IntN(10); {
		case op < 5 || len(model) == 0:
			now += time.Duration(rng.IntN(3)) // equal times too
			gr := grant{now, rng.IntN(100)}
			g.push(gr.at, gr.level)
			model = append(model, gr)
		case op < 7:
			got, ok := g.popOldest()
			if !ok || got != model[0] {
				t.Fatalf("step %d: popOldest = %v, %v; want %v", step, got, ok, model[0])
			}
			model = model[1:]
		case op < 8:
			g.popNewest()
			model = model[:len(model)-1]
		default:
			at := model[0].at - 2 + time.Duration(rng.Int64N(int64(now-model[0].at)+5))
			k := 0
			for i, m := range model {
				if dist(m.at, at) < dist(model[k].at, at) {
					k = i
				}
			}
			got, ok := g.take(at)
			if !ok || got != model[k] {
				t.Fatalf("step %d: take(%v) = %v, %v; want %v of %v", step, at, got, ok, model[k], model)
			}
			model = slices.Delete(model, k, k+1)
		}
		if g.n != len(model) {
			t.Fatalf("step %d: %d grants, want %d", step, g.n, len(model))
		}
	}
	for len(model) > 0 {
		got, _ := g.popOldest()
		if got != model[0] {
			t.Fatalf("drain: %v, want %v", got, model[0])
		}
		model = model[1:]
	}
	if _, ok := g.take(0); ok {
		t.Fatal("take from an empty ring")
	}
	if _, ok := g.popOldest(); ok {
		t.Fatal("popOldest from an empty ring")
	}
}

func dist(a, b time.Duration) time.Duration { return max(a-b, b-a) }
