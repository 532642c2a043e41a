package redis_test

import (
	"context"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/rxbulkhead/bulkhead"

	rxredis "github.com/rxbulkhead/bulkhead/contrib/redis"
)

// fleetIdle waits until the fleet bulkhead name under prefix has no lease
// and no ticket in Redis.
func fleetIdle(t *testing.T, c *goredis.Client, prefix, name string, within time.Duration) {
	t.Helper()
	debugAt := time.Now().Add(within / 2)
	eventually(t, within, "no lease and no ticket left in Redis", func() bool {
		ctx := context.Background()
		n1, err1 := c.ZCard(ctx, prefix+"{"+name+"}:leases").Result()
		n2, err2 := c.ZCard(ctx, prefix+"{"+name+"}:queue").Result()
		if n1+n2 > 0 && time.Now().After(debugAt) {
			l, _ := c.ZRangeWithScores(ctx, prefix+"{"+name+"}:leases", 0, -1).Result()
			q, _ := c.ZRangeWithScores(ctx, prefix+"{"+name+"}:queue", 0, -1).Result()
			t.Logf("leases %v queue %v", l, q)
			debugAt = time.Now().Add(time.Hour)
		}
		return err1 == nil && err2 == nil && n1 == 0 && n2 == 0
	})
}

func TestSeveralProcessesNeverHoldMoreThanTheFleetLimit(t *testing.T) {
	// Keys of its own and processes that wait on Redis, and nothing it
	// checks depends on time (counts; the children go on until they have
	// exercised every outcome): it runs beside the Cluster and Sentinel
	// tests, after the rest (make test's time budget).
	t.Parallel()
	srv := sharedServer(t)
	c := srv.client(t)
	prefix := prefixFor(t)
	flushKeys(t, c, prefix)
	const permits, procs = 3, 3
	// Each child goes on past its 3 s until it has seen 34 grants, a timeout
	// and a cancel (bounded): a loaded machine that runs the children
	// little no longer fails the outcome check below.
	p := childParams{Addr: srv.Addr(), Prefix: prefix, Name: "partner", Permits: permits, Duration: soak(3 * time.Second),
		Workers: 8, Counter: prefix + "holders", LeaseTTL: 10 * time.Second, Renew: time.Second, MinGrants: 34}
	var children []func() childResult
	for i := range procs {
		p.Seed = uint64(i + 1)
		_, sc := startChild(t, "hammer", p)
		children = append(children, func() childResult { return readResult(t, sc) })
	}
	var total childResult
	for _, wait := range children {
		r := wait()
		total.Grants += r.Grants
		total.Cancels += r.Cancels
		total.Timeouts += r.Timeouts
		total.Violations += r.Violations
		total.MaxHolders = max(total.MaxHolders, r.MaxHolders)
		total.LeasesLost += r.LeasesLost
	}
	t.Logf("%d processes × 8 workers on %d permits: %d grants, %d cancels, %d timeouts, max %d holders",
		procs, permits, total.Grants, total.Cancels, total.Timeouts, total.MaxHolders)
	if total.Violations != 0 || total.MaxHolders > permits {
		t.Errorf("%d times more than %d holders (max %d)", total.Violations, permits, total.MaxHolders)
	}
	if total.LeasesLost != 0 {
		t.Errorf("%d leases lost (expired while held)", total.LeasesLost)
	}
	if total.Grants < 100 || total.Timeouts == 0 || total.Cancels == 0 {
		t.Errorf("the hammer did not exercise grants, timeouts and cancels: %+v", total)
	}
	if total.MaxHolders != permits {
		t.Errorf("max holders %d: the permits were never all in use", total.MaxHolders)
	}
	fleetIdle(t, c, prefix, "partner", outcomeTimeout)
}

func TestPermitsOfAKilledHolderComeBackWithinTTLPlusOneRenewal(t *testing.T) {
	srv := sharedServer(t)
	cfg := fastStore()
	cfg.KeyPrefix = prefixFor(t)
	s, c := newStore(t, srv, cfg)
	const permits = 3
	p := childParams{Addr: srv.Addr(), Prefix: cfg.KeyPrefix, Name: "partner", Permits: permits, Hold: 2,
		LeaseTTL: time.Second, Renew: 200 * time.Millisecond}
	cmd, sc := startChild(t, "holder", p)
	held := readResult(t, sc)
	if len(held.Tokens) != 2 {
		t.Fatalf("holder took %d permits, want 2", len(held.Tokens))
	}
	b := newBulkhead(t, s, "partner", fleetConfig(permits, 10*time.Second))
	mine := b.Acquire()
	if err := await(t, mine.Acquisition()); err != nil {
		t.Fatalf("the free permit: %v", err)
	}
	w1, w2 := b.Acquire(), b.Acquire()
	// Renewals keep the holder's leases alive well past their TTL.
	time.Sleep(1500 * time.Millisecond)
	if w1.Acquisition().Err() != bulkhead.ErrPending {
		t.Fatalf("a live holder's permit was taken: %v", w1.Acquisition().Err())
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	_ = cmd.Wait()
	bound := p.LeaseTTL + p.Renew + cfg.PollInterval + 500*time.Millisecond // slack for a loaded machine
	for _, w := range []*rxredis.Permit{w1, w2} {
		if err := await(t, w.Acquisition()); err != nil {
			t.Fatalf("waiter after the kill: %v", err)
		}
	}
	if d := time.Since(killed); d > bound {
		t.Errorf("the killed holder's permits came back after %v, want within TTL %v + renewal %v (+ poll and slack: %v)", d, p.LeaseTTL, p.Renew, bound)
	}
	l1, _ := w1.Lease()
	if l1.Token <= held.Tokens[1] {
		t.Errorf("token after the crash %d not above the holder's %d", l1.Token, held.Tokens[1])
	}
	for _, w := range []*rxredis.Permit{mine, w1, w2} {
		w.Finish()
	}
	fleetIdle(t, c, cfg.KeyPrefix, "partner", outcomeTimeout)
}
