package eventloop

import (
	"testing"
	"testing/synctest"
	"time"
)

// smallConfig is a two-second experiment on 10 partners. Run inside a
// synctest bubble it takes virtual time: CPU work costs none, so only the
// blocking and queueing behaviour shows.
func smallConfig(m Mode, slow bool) Config {
	return Config{
		Mode: m, Slow: slow, Loops: 2, Partners: 10, Clients: 2, SlowClients: 60,
		Duration: 2 * time.Second, SlowAt: 500 * time.Millisecond,
		RequestWork: 10, ResponseWork: 10, RejectWork: 10,
		// In virtual time an immediate retry would spin without time passing.
		RetryDelay: time.Millisecond,
	}
}

func runInBubble(t *testing.T, cfg Config) Result {
	t.Helper()
	var res Result
	synctest.Test(t, func(t *testing.T) {
		r, err := Run(cfg)
		if err != nil {
			t.Fatalf("Run(%v, slow=%v): %v", cfg.Mode, cfg.Slow, err)
		}
		res = r
	})
	return res
}

func TestAsyncKeepsHealthyThroughputWhileSlowPartnerSaturates(t *testing.T) {
	base := runInBubble(t, smallConfig(Async, false))
	slow := runInBubble(t, smallConfig(Async, true))
	if base.HealthyRate() == 0 {
		t.Fatal("baseline completed no healthy call")
	}
	ratio := slow.HealthyRate() / base.HealthyRate()
	t.Logf("async: healthy %.0f/s baseline, %.0f/s with slow partner (%.3f)", base.HealthyRate(), slow.HealthyRate(), ratio)
	if ratio < 0.95 {
		t.Errorf("async healthy throughput ratio = %.3f; want >= 0.95", ratio)
	}
	if tot := slow.Totals(); tot.HealthyRejected != 0 {
		t.Errorf("healthy partners had %d rejections; want 0", tot.HealthyRejected)
	}
	if bs, ss := base.Totals().Slow, slow.Totals().Slow; ss >= bs {
		t.Errorf("slow partner completed %d calls, baseline %d: the slowdown did not take effect", ss, bs)
	}
}

func TestBlockingOnTheLoopStallsHealthyPartners(t *testing.T) {
	base := runInBubble(t, smallConfig(Blocking, false))
	slow := runInBubble(t, smallConfig(Blocking, true))
	ratio := slow.HealthyRate() / base.HealthyRate()
	t.Logf("blocking: healthy %.0f/s baseline, %.0f/s with slow partner (%.3f)", base.HealthyRate(), slow.HealthyRate(), ratio)
	if ratio > 0.5 {
		t.Errorf("blocking healthy throughput ratio = %.3f; want the blocked loops to cost at least half", ratio)
	}
}

func TestFailFastRejectsOnlyTheSlowPartner(t *testing.T) {
	slow := runInBubble(t, smallConfig(FailFast, true))
	tot := slow.Totals()
	if tot.SlowRejected == 0 {
		t.Error("the saturated partner was never rejected")
	}
	if tot.HealthyRejected != 0 {
		t.Errorf("healthy partners had %d rejections; want 0", tot.HealthyRejected)
	}
	for _, s := range slow.Samples {
		if s.At+slow.Config.Bin <= slow.Config.SlowAt && s.SlowRejected != 0 {
			t.Errorf("partner 0 rejected %d calls at %v, before it slowed down", s.SlowRejected, s.At)
		}
	}
}

func TestRunRejectsBadConfig(t *testing.T) {
	for _, cfg := range []Config{
		{Partners: 1},
		{SlowAt: 5 * time.Second, Duration: time.Second},
		{Mode: Mode(9)},
	} {
		if _, err := Run(cfg); err == nil {
			t.Errorf("Run(%+v) succeeded; want an error", cfg)
		}
	}
}

func TestModeString(t *testing.T) {
	for m, want := range map[Mode]string{Blocking: "blocking", FailFast: "fail-fast", Async: "async", Mode(7): "Mode(7)"} {
		if got := m.String(); got != want {
			t.Errorf("Mode(%d).String() = %q; want %q", int(m), got, want)
		}
	}
}
