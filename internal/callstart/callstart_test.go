package callstart

import (
	"math"
	"testing"
	"time"
)

func TestTheZeroStartIsUnknown(t *testing.T) {
	var s Start
	if Epoch(s) != nil || At(s) != 0 || Since(s, time.Now()) != 0 {
		t.Fatalf("zero Start: epoch %v, at %d, since %v", Epoch(s), At(s), Since(s, time.Now()))
	}
}

func TestSinceIsTheTimeFromTheOffsetAndNeverNegative(t *testing.T) {
	ep := time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC)
	s := Make(&ep, Offset(ep.Add(10*time.Millisecond), ep))
	if got := Since(s, ep.Add(25*time.Millisecond)); got != 15*time.Millisecond {
		t.Fatalf("Since = %v, want 15ms", got)
	}
	if got := Since(s, ep); got != 0 {
		t.Fatalf("Since before the start = %v, want 0", got)
	}
}

func TestOffsetIsAtLeastOneAndSaturates(t *testing.T) {
	ep := time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		t    time.Time
		want int64
	}{
		{ep, 1},
		{ep.Add(-time.Hour), 1},
		{ep.Add(time.Nanosecond), 2},
		{ep.Add(math.MaxInt64).Add(time.Hour), math.MaxInt64}, // t.Sub saturates at MaxInt64
	} {
		if got := Offset(c.t, ep); got != c.want {
			t.Errorf("Offset(%v) = %d, want %d", c.t.Sub(ep), got, c.want)
		}
	}
}
