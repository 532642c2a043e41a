package redis_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rxbulkhead/bulkhead"
	rxredis "github.com/rxbulkhead/bulkhead/contrib/redis"
)

// One ChangeConfig, in this process, changes the limit of every replica:
// the children are configured with 2 permits, the stored limit of 4 lets
// them hold up to 4 together, and lowering it to 2 under load stops them
// within a round trip plus the longest call. The independent counter
// never sees more than the stored limit.
func TestChangeConfigReachesEveryReplicaUnderLoad(t *testing.T) {
	srv := sharedServer(t)
	cfg := fastStore()
	cfg.KeyPrefix = prefixFor(t)
	s, c := newStore(t, srv, cfg)
	b := newBulkhead(t, s, "partner", fleetConfig(2, time.Second))
	ctx := context.Background()
	raised := b.Config()
	raised.MaxConcurrentCalls = 4
	if err := b.ChangeConfig(ctx, raised); err != nil {
		t.Fatal(err)
	}
	if m, err := b.FleetMetrics(ctx); err != nil || m.MaxConcurrentCalls != 4 {
		t.Fatalf("fleet metrics after ChangeConfig(4): %+v, %v", m, err)
	}
	const procs = 3
	p := childParams{Addr: srv.Addr(), Prefix: cfg.KeyPrefix, Name: "partner", Permits: 2, MaxAllowed: 4,
		Duration: soak(3 * time.Second), Workers: 6, Counter: cfg.KeyPrefix + "holders", LeaseTTL: 10 * time.Second, Renew: time.Second}
	var children []func() childResult
	for i := range procs {
		p.Seed = uint64(i + 1)
		_, sc := startChild(t, "hammer", p)
		children = append(children, func() childResult { return readResult(t, sc) })
	}
	// Lower the limit once the children have held more than their
	// configured 2 together (the stored 4 reached them) at 20 reads of the
	// independent counter, 10ms apart at least: a fixed wait of 1.5s lowered
	// it before the children had started on a loaded machine, and waited
	// longer than needed on an idle one. Twenty reads, not one, so that the
	// children's own records of those holds (taken after their INCR
	// returned) fall before the change even when a child is slow to run.
	seen := 0
	eventually(t, p.Duration+outcomeTimeout, "the children holding more than 2 together under the stored limit of 4", func() bool {
		if n, err := c.Get(ctx, p.Counter).Int(); err == nil && n > 2 {
			seen++
		}
		return seen >= 20
	})
	lowered := b.Config()
	lowered.MaxConcurrentCalls = 2
	if err := b.ChangeConfig(ctx, lowered); err != nil {
		t.Fatal(err)
	}
	changed := time.Now()
	// Calls in flight above the new limit finish (at most 35ms each) and
	// nobody is admitted until the fleet is below it.
	const grace = 300 * time.Millisecond
	var overBefore, overAfter int
	var total childResult
	for i, wait := range children {
		r := wait()
		total.Grants += r.Grants
		total.Violations += r.Violations
		total.MaxHolders = max(total.MaxHolders, r.MaxHolders)
		for _, at := range r.Over {
			if time.Unix(0, at).Before(changed) {
				overBefore++
			} else if time.Unix(0, at).After(changed.Add(grace)) {
				overAfter++
			}
		}
		if r.Limit != 2 {
			t.Errorf("child %d ends with limit %d, want the stored 2", i, r.Limit)
		}
	}
	t.Logf("%d processes configured with 2 permits: %d grants, max %d holders; %d times above 2 before lowering the stored limit from 4, %d after (grace %v)",
		procs, total.Grants, total.MaxHolders, overBefore, overAfter, grace)
	if total.Violations != 0 || total.MaxHolders > 4 {
		t.Errorf("%d times more than the stored limit 4 (max %d)", total.Violations, total.MaxHolders)
	}
	if overBefore == 0 {
		t.Error("the children never held more than their configured 2: the stored limit of 4 did not reach them")
	}
	if overAfter != 0 {
		t.Errorf("%d times more than 2 holders %v after the limit was lowered to 2", overAfter, grace)
	}
	if got := b.Config().MaxConcurrentCalls; got != 2 {
		t.Errorf("Config().MaxConcurrentCalls = %d after ChangeConfig(2)", got)
	}
	fleetIdle(t, c, cfg.KeyPrefix, "partner", outcomeTimeout)
}

func TestChangeConfigRefusesChangesToPerProcessFieldsWithAConfigError(t *testing.T) {
	s, _ := newStore(t, sharedServer(t), fastStore())
	b := newBulkhead(t, s, "p", fleetConfig(2, time.Second))
	bad := b.Config()
	bad.MaxWaitDuration = 2 * time.Second
	var ce *bulkhead.ConfigError
	if err := b.ChangeConfig(context.Background(), bad); !errors.As(err, &ce) || ce.Name != "p" {
		t.Errorf("ChangeConfig with another MaxWaitDuration: %v, want a *bulkhead.ConfigError naming the bulkhead", err)
	}
	invalid := b.Config()
	invalid.MaxConcurrentCalls = 0
	if err := b.ChangeConfig(context.Background(), invalid); !errors.As(err, &ce) || ce.Field != "MaxConcurrentCalls" {
		t.Errorf("ChangeConfig(0 permits): %v, want a *bulkhead.ConfigError on MaxConcurrentCalls", err)
	}
	if b.Config().MaxConcurrentCalls != 2 {
		t.Errorf("a refused change changed the limit to %d", b.Config().MaxConcurrentCalls)
	}
}

// After Store.Close the caller's client is still open, so a ChangeConfig
// could still write the fleet limit (and re-create a config key nobody
// renews): it fails with ErrClosed instead and sends nothing.
func TestChangeConfigAfterCloseFailsWithErrClosedAndSendsNothing(t *testing.T) {
	srv := sharedServer(t)
	cfg := fastStore()
	cfg.KeyPrefix = prefixFor(t)
	c := srv.client(t) // the test's own commands
	sc := srv.client(t)
	touches := &keyTouches{sub: "{closed}"}
	sc.AddHook(touches)
	flushKeys(t, c, cfg.KeyPrefix)
	s, err := rxredis.NewStore(sc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	b, err := rxredis.NewBulkhead(s, "closed", fleetConfig(2, time.Second))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	raised := b.Config()
	raised.MaxConcurrentCalls = 3
	if err := b.ChangeConfig(ctx, raised); err != nil {
		t.Fatalf("ChangeConfig before Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	before := touches.n.Load()
	raised.MaxConcurrentCalls = 5
	err = b.ChangeConfig(ctx, raised)
	if !errors.Is(err, rxredis.ErrClosed) || !strings.Contains(err.Error(), `"closed"`) {
		t.Errorf("ChangeConfig after Close: %v, want an error naming the bulkhead and matching ErrClosed", err)
	}
	if n := touches.n.Load() - before; n != 0 {
		t.Errorf("ChangeConfig after Close sent %d commands naming the bulkhead's keys", n)
	}
	if b.Config().MaxConcurrentCalls != 3 {
		t.Errorf("Config().MaxConcurrentCalls = %d after a refused change, want 3", b.Config().MaxConcurrentCalls)
	}
}
