package redis_test

import (
	"context"
	"errors"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/rxbulkhead/bulkhead"

	rxredis "github.com/rxbulkhead/bulkhead/contrib/redis"
)

func TestAReleaseWakesAWaiterOfAnotherReplicaThroughPubSub(t *testing.T) {
	srv := sharedServer(t)
	name := "rxbt-pubsub-" + strconv.Itoa(os.Getpid())
	c := srv.client(t, func(o *goredis.Options) { o.ClientName = name })
	checkReleaseWakesThroughPubSub(t, c, name, srv.client(t))
}

// checkReleaseWakesThroughPubSub checks that a release through one Store
// over c wakes a waiter of another Store over c whose polling is off:
// only the release message, through the second Store's subscription, can
// wake it. c's ClientName is name, which the subscriptions carry (they
// are made from c's options): the check waits until every server of
// servers lists two connections of that name with a pattern subscription
// between them, so that the release cannot come before the subscriptions.
func checkReleaseWakesThroughPubSub(t *testing.T, c goredis.UniversalClient, name string, servers ...*goredis.Client) {
	t.Helper()
	cfg := fastStore()
	cfg.KeyPrefix = prefixFor(t) + "pubsub:"
	// Nothing here stalls a server: a Timeout of 2 s (not 300 ms) keeps a
	// loaded machine's slow replies from failing the setup's acquire as
	// "redis unreachable" (seen once at load 24, over a 3-master cluster).
	cfg.Timeout = 2 * time.Second
	if c, ok := c.(*goredis.Client); ok {
		flushKeys(t, c, cfg.KeyPrefix)
	}
	sa, err := rxredis.NewStore(c, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer sa.Close()
	cfg.PollInterval = time.Hour // only the release message can wake it
	sb, err := rxredis.NewStore(c, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	a := newBulkhead(t, sa, "p", fleetConfig(1, 30*time.Second))
	b := newBulkhead(t, sb, "p", fleetConfig(1, 30*time.Second))
	held := a.Acquire()
	if err := await(t, held.Acquisition()); err != nil {
		t.Fatal(err)
	}
	w := b.AcquirePermissionAsync()
	eventually(t, outcomeTimeout, "waiter queued", func() bool { m, _ := b.FleetMetrics(context.Background()); return m.QueuedCalls == 1 })
	eventually(t, outcomeTimeout, "both stores subscribed under the client's name", func() bool {
		n := 0
		for _, sc := range servers {
			list, err := sc.ClientList(context.Background()).Result()
			if err != nil {
				return false
			}
			for _, l := range strings.Split(list, "\n") {
				if strings.Contains(l, " name="+name+" ") && strings.Contains(l, " psub=1 ") {
					n++
				}
			}
		}
		return n == 2
	})
	released := time.Now()
	held.Finish()
	if err := await(t, w); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(released); d > 2*time.Second {
		t.Errorf("woken after %v with polling off: the release message did not arrive", d)
	}
	b.FinishCall()
}

func TestALeaseTakenByAnotherHolderWhileExpiredIsReportedLost(t *testing.T) {
	srv := sharedServer(t)
	cfg := fastStore()
	s, c := newStore(t, srv, cfg)
	b := newBulkhead(t, s, "p", fleetConfig(1, time.Second))
	p := b.Acquire()
	if err := await(t, p.Acquisition()); err != nil {
		t.Fatal(err)
	}
	lease, _ := p.Lease()
	// What a long pause of this process looks like from Redis: the lease
	// expired and another holder took the permit.
	ctx := context.Background()
	key := prefixFor(t) + "{p}:leases"
	c.ZRem(ctx, key, lease.ID)
	c.ZAdd(ctx, key, goredisZ(float64(time.Now().Add(time.Minute).UnixMilli()), "other-holder"))
	eventually(t, outcomeTimeout, "lease reported lost", p.Lost)
	m, _ := b.FleetMetrics(ctx)
	if m.LeasesLost != 1 || m.InFlightCalls != 1 {
		t.Errorf("FleetMetrics %+v, want 1 lost and only the other holder's lease", m)
	}
	p.Finish()
	c.ZRem(ctx, key, "other-holder")
}

func TestCloseRejectsWaitersAndGivesBackEveryLease(t *testing.T) {
	srv := sharedServer(t)
	s, c := newStore(t, srv, fastStore())
	b, err := rxredis.NewBulkhead(s, "p", fleetConfig(2, 30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := await(t, b.AcquirePermissionAsync()); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	var reasons []bulkhead.Reason
	b.OnEvent(func(e bulkhead.Event) {
		if e.Type == bulkhead.CallRejected {
			mu.Lock()
			reasons = append(reasons, e.Reason)
			mu.Unlock()
		}
	})
	o := newOutcomes()
	w := o.watch(b.AcquirePermissionAsync())
	eventually(t, outcomeTimeout, "waiter queued", func() bool { m, _ := b.FleetMetrics(context.Background()); return m.QueuedCalls == 1 })
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	o.check(t, []*bulkhead.Acquisition{w})
	if !errors.Is(w.Err(), rxredis.ErrClosed) {
		t.Errorf("waiter at Close: %v, want ErrClosed", w.Err())
	}
	fleetIdle(t, c, prefixFor(t), "p", outcomeTimeout)
	b.FinishCall() // after Close: does nothing
	if err := await(t, b.AcquirePermissionAsync()); !errors.Is(err, rxredis.ErrClosed) {
		t.Errorf("acquisition after Close: %v, want ErrClosed", err)
	}
	if m := b.Metrics(); m.InFlightCalls != 0 || m.QueuedCalls != 0 {
		t.Errorf("after Close: %+v", m)
	}
	// The waiter rejected by Close and the call after it: rejections the
	// exporters count as reason="unavailable".
	mu.Lock()
	defer mu.Unlock()
	if want := []bulkhead.Reason{bulkhead.Unavailable, bulkhead.Unavailable}; !slices.Equal(reasons, want) {
		t.Errorf("reasons of the rejections at and after Close: %v, want %v", reasons, want)
	}
}

func goredisZ(score float64, member string) goredis.Z { return goredis.Z{Score: score, Member: member} }
