package clock_test

import (
	"math"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rxbulkhead/bulkhead/internal/clock"
)

type timer interface{ Stop() bool }

type fixed struct{ t time.Time }

func (f fixed) Now() time.Time { return f.t }

func TestAddSaturatesInsteadOfWrappingAround(t *testing.T) {
	for _, tc := range []struct{ a, b, want time.Duration }{
		{1, 2, 3},
		{math.MaxInt64 - 1, 1, math.MaxInt64},
		{math.MaxInt64 - 1, 2, math.MaxInt64},
		{time.Hour, math.MaxInt64, math.MaxInt64},
		{math.MaxInt64, 0, math.MaxInt64},
		{5, -2, 3},
	} {
		if got := clock.Add(tc.a, tc.b); got != tc.want {
			t.Errorf("Add(%d, %d) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestSinceReadsTheGivenClock(t *testing.T) {
	epoch := time.Unix(100, 0)
	if got := clock.Since[timer](fixed{epoch.Add(3 * time.Second)}, epoch); got != 3*time.Second {
		t.Fatalf("Since = %v, want 3s", got)
	}
}

func TestRealRunsOnTheTimePackage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var c clock.Real[timer]
		epoch := c.Now()
		fired := make(chan time.Duration, 1)
		c.AfterFunc(time.Minute, func() { fired <- clock.Since[timer](c, epoch) })
		if got := <-fired; got != time.Minute {
			t.Fatalf("the timer fired after %v on the bubble's clock, want 1m", got)
		}
		stopped := c.AfterFunc(time.Minute, func() { t.Error("a stopped timer fired") })
		if !stopped.Stop() {
			t.Fatal("Stop of a pending timer returned false")
		}
		time.Sleep(2 * time.Minute)
	})
}
