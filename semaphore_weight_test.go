package bulkhead_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rxbulkhead/bulkhead"
)

// Tests of weighted calls on a Semaphore (SemaphoreCall; docs/design.md,
// "Weighted calls on a Semaphore").

func weightedConfig(limit int, order bulkhead.QueueOrder) bulkhead.Config {
	return bulkhead.Config{MaxConcurrentCalls: limit, MaxWaitDuration: time.Hour, MaxQueuedCalls: bulkhead.Unbounded, QueueOrder: order}
}

// eventLog records the events of a Semaphore as "Type/Reason" strings.
type eventLog struct{ seen []string }

func (l *eventLog) watch(s *bulkhead.Semaphore) func() {
	return s.OnEvent(func(e bulkhead.Event) { l.seen = append(l.seen, fmt.Sprintf("%s/%s", e.Type, e.Reason)) })
}

func (l *eventLog) count(prefix string) int {
	n := 0
	for _, e := range l.seen {
		if strings.HasPrefix(e, prefix) {
			n++
		}
	}
	return n
}

func TestSemaphoreCallTakesAndGivesKPermits(t *testing.T) {
	s := newSemaphore(t, "edi", weightedConfig(10, bulkhead.FIFO))
	var ev eventLog
	defer ev.watch(s)()
	c4, c7 := s.Call(4), s.Call(7)
	if c4.Weight() != 4 || c4.Name() != "edi" {
		t.Fatalf("Call(4): weight %d, name %q", c4.Weight(), c4.Name())
	}
	if !c4.TryAcquirePermission() {
		t.Fatal("Call(4).TryAcquirePermission failed with 10 permits free")
	}
	if m := s.Metrics(); m.InFlightCalls != 4 || m.AvailableConcurrentCalls != 6 {
		t.Fatalf("after a call of weight 4: %+v", m)
	}
	if c7.TryAcquirePermission() {
		t.Fatal("Call(7).TryAcquirePermission succeeded with 6 permits free")
	}
	if a := s.Call(6).AcquirePermissionAsync(); !a.Granted() {
		t.Fatalf("Call(6).AcquirePermissionAsync with 6 free: %v", a.Err())
	}
	if m := s.Metrics(); m.InFlightCalls != 10 || m.AvailableConcurrentCalls != 0 {
		t.Fatalf("after weights 4 and 6: %+v", m)
	}
	c4.FinishCall()
	s.Call(6).ReleasePermission()
	if m := s.Metrics(); m.InFlightCalls != 0 || m.AvailableConcurrentCalls != 10 {
		t.Fatalf("after giving back 4 and 6: %+v", m)
	}
	want := []string{"permitted/none", "rejected/no wait", "permitted/none", "finished/none"}
	if !slices.Equal(ev.seen, want) {
		t.Fatalf("events %v, want %v", ev.seen, want)
	}
}

func TestSemaphoreCallPanicsBelowWeightOne(t *testing.T) {
	s := newSemaphore(t, "edi", weightedConfig(10, bulkhead.FIFO))
	for _, k := range []int{0, -1} {
		func() {
			defer func() {
				r := recover()
				if r == nil || !strings.Contains(fmt.Sprint(r), `bulkhead "edi": Call with weight`) {
					t.Fatalf("Call(%d): recovered %v, want a panic naming the bulkhead and the weight", k, r)
				}
			}()
			s.Call(k)
		}()
	}
}

func TestSemaphoreCallOverReleasePanics(t *testing.T) {
	s := newSemaphore(t, "edi", weightedConfig(10, bulkhead.FIFO))
	if !s.Call(2).TryAcquirePermission() {
		t.Fatal("no grant")
	}
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "released more permits than were acquired") {
			t.Fatalf("recovered %v", r)
		}
		if m := s.Metrics(); m.InFlightCalls != 2 {
			t.Fatalf("an over-release changed the count: %+v", m)
		}
		s.Call(2).FinishCall()
	}()
	s.Call(3).FinishCall()
}

// A call heavier than MaxConcurrentCalls fails at once with ErrTooHeavy,
// not ErrBulkheadFull, whatever the free permits, and takes nothing.
func TestSemaphoreCallHeavierThanTheLimitIsTooHeavy(t *testing.T) {
	for _, shadow := range []bool{false, true} {
		cfg := weightedConfig(10, bulkhead.FIFO)
		cfg.ShadowMode = shadow
		s := newSemaphore(t, "edi", cfg)
		var ev eventLog
		remove := ev.watch(s)
		c := s.Call(11)
		check := func(how string, err error) {
			t.Helper()
			var te *bulkhead.TooHeavyError
			if !errors.As(err, &te) || !errors.Is(err, bulkhead.ErrTooHeavy) || errors.Is(err, bulkhead.ErrBulkheadFull) {
				t.Fatalf("shadow %v, %s: %v, want a *TooHeavyError (ErrTooHeavy, not ErrBulkheadFull)", shadow, how, err)
			}
			if *te != (bulkhead.TooHeavyError{Name: "edi", Weight: 11, Limit: 10}) {
				t.Fatalf("%s: %+v", how, *te)
			}
			if got := err.Error(); got != `bulkhead "edi": a call of weight 11 is heavier than its MaxConcurrentCalls of 10` {
				t.Fatalf("%s: %q", how, got)
			}
		}
		check("AcquirePermissionAsync", c.AcquirePermissionAsync().Err())
		check("AcquirePermission", c.AcquirePermission(context.Background()))
		if c.TryAcquirePermission() {
			t.Fatal("TryAcquirePermission of a call heavier than the limit succeeded")
		}
		remove()
		if n := ev.count("rejected/none"); n != 3 || len(ev.seen) != 3 {
			t.Fatalf("shadow %v: events %v, want 3 CallRejected without a reason", shadow, ev.seen)
		}
		if m := s.Metrics(); m.InFlightCalls != 0 || m.QueuedCalls != 0 {
			t.Fatalf("metrics %+v", m)
		}
	}
}

// A ChangeConfig that lowers the limit below a queued waiter's weight
// rejects that waiter with a *TooHeavyError (CallRejected, no Reason);
// lighter ones keep waiting and are granted in order.
func TestChangeConfigRejectsQueuedWaitersHeavierThanTheNewLimit(t *testing.T) {
	for _, order := range []bulkhead.QueueOrder{bulkhead.FIFO, bulkhead.LIFO} {
		t.Run(order.String(), func(t *testing.T) {
			s := newSemaphore(t, "edi", weightedConfig(6, order))
			if !s.Call(6).TryAcquirePermission() {
				t.Fatal("no grant")
			}
			var o outcomes
			o.watch("h5", s.Call(5).AcquirePermissionAsync())
			o.watch("l2", s.Call(2).AcquirePermissionAsync())
			var ev eventLog
			defer ev.watch(s)()
			if err := s.ChangeConfig(weightedConfig(4, order)); err != nil {
				t.Fatal(err)
			}
			want := `h5:bulkhead "edi": a call of weight 5 is heavier than its MaxConcurrentCalls of 4`
			if got := o.list(); !slices.Equal(got, []string{want}) {
				t.Fatalf("after ChangeConfig to 4: %v, want [%s]", got, want)
			}
			if m := s.Metrics(); m.QueuedCalls != 1 || m.InFlightCalls != 6 || m.AvailableConcurrentCalls != 0 {
				t.Fatalf("metrics %+v", m)
			}
			if !slices.Equal(ev.seen, []string{"rejected/none"}) {
				t.Fatalf("events %v", ev.seen)
			}
			s.Call(6).FinishCall() // free: 4 - 0 = 4
			if got := o.list(); len(got) != 2 || got[1] != "l2" {
				t.Fatalf("after the release: %v", got)
			}
			s.Call(2).FinishCall()
		})
	}
}

// holdOnes takes n permits one by one (weight-1 calls) and returns them.
func holdOnes(t *testing.T, s *bulkhead.Semaphore, n int) {
	t.Helper()
	for range n {
		if !s.TryAcquirePermission() {
			t.Fatal("no permit")
		}
	}
}

// The two halves of bounded bypass, FIFO and LIFO. A heavy waiter that
// does not fit lets lighter waiters behind it go while permits are free
// (no stall), but only for MaxConcurrentCalls permits in all; then the
// permits coming back stay free for it, and it is granted by the time
// MaxConcurrentCalls + k permits have come back (no starvation).
func TestSemaphoreLightCallsPassAHeavyOneForAtMostTheLimit(t *testing.T) {
	for _, order := range []bulkhead.QueueOrder{bulkhead.FIFO, bulkhead.LIFO} {
		t.Run(order.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const limit, k = 4, 4
				s := newSemaphore(t, "edi", weightedConfig(limit, order))
				holdOnes(t, s, limit)
				var o outcomes
				if order == bulkhead.FIFO {
					o.watch("heavy", s.Call(k).AcquirePermissionAsync())
				}
				for i := range 8 {
					o.watch(fmt.Sprintf("l%d", i), s.AcquirePermissionAsync())
				}
				if order == bulkhead.LIFO { // the newest goes first
					o.watch("heavy", s.Call(k).AcquirePermissionAsync())
				}
				if got := o.list(); len(got) != 0 {
					t.Fatalf("granted with no permit free: %v", got)
				}
				released := 0
				heavyAt := 0
				for heavyAt == 0 && released < 3*limit {
					s.FinishCall() // a weight-1 holder (the first ones, then the lights)
					released++
					if slices.Contains(o.list(), "heavy") {
						heavyAt = released
					}
				}
				got := o.list()
				lights := slices.Index(got, "heavy")
				if heavyAt == 0 {
					t.Fatalf("the heavy call was never granted: %v", got)
				}
				if lights != limit {
					t.Errorf("%d light calls passed the heavy one, want exactly MaxConcurrentCalls = %d (no stall before, no more after): %v", lights, limit, got)
				}
				if heavyAt > limit+k {
					t.Errorf("the heavy call was granted after %d permits came back, want at most MaxConcurrentCalls + k = %d", heavyAt, limit+k)
				}
				if m := s.Metrics(); m.InFlightCalls != k || m.QueuedCalls != 4 {
					t.Fatalf("metrics %+v", m)
				}
				// The release grants the 4 lights left: the first one's
				// callbacks run on this goroutine, each other's on a fresh
				// one that FinishCall only waits to have started (runDecided
				// in delivery.go): wait for them before reading o.
				s.Call(k).FinishCall()
				synctest.Wait()
				if got := o.list(); len(got) != 9 {
					t.Fatalf("after the heavy call finished, the 4 lights left should be granted: %v", got)
				}
				for range limit {
					s.FinishCall()
				}
			})
		})
	}
}

// No stall: a light waiter behind a heavy one that does not fit is granted
// at once when a permit is free, even as it arrives (x/sync/semaphore
// would hold it back until the heavy one runs).
func TestSemaphoreLightCallIsNotStalledBehindAHeavyOne(t *testing.T) {
	s := newSemaphore(t, "edi", weightedConfig(4, bulkhead.FIFO))
	holdOnes(t, s, 3)
	heavy := s.Call(4).AcquirePermissionAsync()
	light := s.AcquirePermissionAsync()
	if !light.Granted() || heavy.Err() != bulkhead.ErrPending {
		t.Fatalf("light %v, heavy %v: want the light granted at once and the heavy pending", light.Err(), heavy.Err())
	}
	s.FinishCall() // light
	for range 3 {
		s.FinishCall()
	}
	if !heavy.Granted() {
		t.Fatalf("heavy %v after every other permit came back", heavy.Err())
	}
	s.Call(4).FinishCall()
}

// A blocking weighted call waits for its k permits and gets them in queue
// order; one whose context ends first leaves nothing held or queued, and
// the permits a heavy waiter held back go to the light one behind it.
func TestSemaphoreCallAcquirePermissionBlocks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSemaphore(t, "edi", weightedConfig(4, bulkhead.FIFO))
		holdOnes(t, s, 3)
		ctx, cancel := context.WithCancel(context.Background())
		heavyErr := make(chan error, 1)
		go func() { heavyErr <- s.Call(3).AcquirePermission(ctx) }()
		synctest.Wait()
		if m := s.Metrics(); m.QueuedCalls != 1 {
			t.Fatalf("the heavy call is not queued: %+v", m)
		}
		granted := make(chan error, 1)
		go func() { granted <- s.Call(2).AcquirePermission(context.Background()) }()
		synctest.Wait()
		cancel() // the heavy call withdraws: 1 free permit, 2 wanted by the next
		synctest.Wait()
		if err := <-heavyErr; !errors.Is(err, context.Canceled) {
			t.Fatalf("the heavy call: %v, want context.Canceled", err)
		}
		s.FinishCall()
		synctest.Wait()
		if err := <-granted; err != nil {
			t.Fatalf("the call of weight 2: %v", err)
		}
		if m := s.Metrics(); m.InFlightCalls != 4 || m.QueuedCalls != 0 {
			t.Fatalf("metrics %+v", m)
		}
		s.Call(2).FinishCall()
		s.FinishCall()
		s.FinishCall()
	})
}

// Cancelling the heavy waiter that held lighter ones back (the allowance
// spent) grants them at once. Cancel runs no callback but the withdrawn
// call's: theirs run on a fresh goroutine that Cancel only waits to have
// started (deliverAside in weights.go), hence the synctest.Wait.
func TestCancellingAHeavyWaiterGrantsTheLightOnesItHeldBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSemaphore(t, "edi", weightedConfig(2, bulkhead.FIFO))
		holdOnes(t, s, 2)
		heavy := s.Call(2).AcquirePermissionAsync()
		var o outcomes
		for i := range 4 {
			o.watch(fmt.Sprintf("l%d", i), s.AcquirePermissionAsync())
		}
		s.FinishCall() // l0 passes (bypass 1)
		s.FinishCall() // l1 passes (bypass 2: the allowance is spent)
		s.FinishCall() // l0's permit: free 1, kept for the heavy one
		if got := o.list(); !slices.Equal(got, []string{"l0", "l1"}) {
			t.Fatalf("%v, want [l0 l1] and the rest held back for the heavy call", got)
		}
		if !heavy.Cancel() {
			t.Fatal("Cancel failed")
		}
		synctest.Wait()
		if got := o.list(); !slices.Equal(got, []string{"l0", "l1", "l2"}) {
			t.Fatalf("after the heavy call withdrew: %v, want l2 granted", got)
		}
		for range 3 {
			s.FinishCall()
		}
	})
}

// The expiry of a heavy waiter that held lighter ones back grants them in
// the same sweep.
func TestExpiryOfAHeavyWaiterGrantsTheLightOnesItHeldBack(t *testing.T) {
	clk := newClock()
	cfg := weightedConfig(2, bulkhead.FIFO)
	cfg.MaxWaitDuration = time.Second
	s := newSemaphore(t, "edi", cfg, bulkhead.WithClock(clk))
	holdOnes(t, s, 2)
	heavy := s.Call(2).AcquirePermissionAsync()
	clk.Advance(500 * time.Millisecond)
	var o outcomes
	for i := range 4 {
		o.watch(fmt.Sprintf("l%d", i), s.AcquirePermissionAsync())
	}
	s.FinishCall()
	s.FinishCall()
	s.FinishCall()
	if got := o.list(); !slices.Equal(got, []string{"l0", "l1"}) {
		t.Fatalf("%v", got)
	}
	clk.Advance(500 * time.Millisecond)
	if !errors.Is(heavy.Err(), bulkhead.ErrBulkheadFull) {
		t.Fatalf("heavy: %v, want a WaitTimeout", heavy.Err())
	}
	if got := o.list(); !slices.Equal(got, []string{"l0", "l1", "l2"}) {
		t.Fatalf("after the heavy call expired: %v, want l2 granted", got)
	}
	for range 3 {
		s.FinishCall()
	}
	clk.Advance(time.Second) // l3 expires
}

// The weighted fast paths allocate nothing.
func TestSemaphoreCallFastPathsDoNotAllocate(t *testing.T) {
	s := newSemaphore(t, "edi", weightedConfig(10, bulkhead.FIFO))
	c := s.Call(3)
	if n := testing.AllocsPerRun(100, func() {
		if c.TryAcquirePermission() {
			c.FinishCall()
		}
		if a := c.AcquirePermissionAsync(); a.Granted() {
			c.FinishCall()
		}
		if s.Call(10).AcquirePermission(context.Background()) == nil {
			s.Call(10).ReleasePermission()
		}
	}); n != 0 {
		t.Fatalf("%v allocations per run", n)
	}
}

// A LIFO newcomer that evicts a heavy waiter which held a free permit back
// takes that permit at once (the fuzz model found it left waiting).
func TestLIFONewcomerEvictingAHeavyWaiterTakesTheFreePermit(t *testing.T) {
	cfg := weightedConfig(2, bulkhead.LIFO)
	cfg.MaxQueuedCalls = 1
	s := newSemaphore(t, "edi", cfg)
	holdOnes(t, s, 1)
	heavy := s.Call(2).AcquirePermissionAsync()
	light := s.AcquirePermissionAsync()
	if !errors.Is(heavy.Err(), bulkhead.ErrBulkheadFull) || !light.Granted() {
		t.Fatalf("heavy %v, light %v: want the heavy one evicted and the light one granted", heavy.Err(), light.Err())
	}
	s.FinishCall()
	s.FinishCall()
}

// Random weighted traffic on one goroutine, with the limit fixed: the two
// halves of docs/design.md's claim, checked after every operation. (i)
// While a waiter waits, the calls granted past it (behind it in grant
// order: younger in FIFO, older in LIFO) take at most MaxConcurrentCalls
// permits in all. (ii) A call waits while permits are free only behind
// one that needs more than are free.
func TestSemaphoreBypassIsBoundedAndNeverStalls(t *testing.T) {
	type call struct {
		seq, k  int
		a       *bulkhead.Acquisition
		charged int // permits granted past it while it waited
	}
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 27))
		limit := 2 + rng.IntN(4)
		order := bulkhead.QueueOrder(rng.IntN(2))
		s := newSemaphore(t, "edi", weightedConfig(limit, order), bulkhead.WithClock(newClock()))
		var pending, held []*call
		seq := 0
		for op := range 300 {
			switch r := rng.IntN(10); {
			case r < 5:
				k := 1 + rng.IntN(limit)
				if rng.IntN(3) > 0 {
					k = 1 // mostly light calls, so that heavy ones get passed
				}
				c := &call{seq: seq, k: k, a: s.Call(k).AcquirePermissionAsync()}
				seq++
				pending = append(pending, c)
			case r < 8 && len(held) > 0:
				i := rng.IntN(len(held))
				s.Call(held[i].k).FinishCall()
				held = slices.Delete(held, i, i+1)
			case len(pending) > 0:
				pending[rng.IntN(len(pending))].a.Cancel()
			}
			// Collect this operation's grants, then charge the waiters
			// they passed.
			var granted []*call
			kept := pending[:0]
			for _, c := range pending {
				switch c.a.Err() {
				case bulkhead.ErrPending:
					kept = append(kept, c)
				case nil:
					granted = append(granted, c)
					held = append(held, c)
				}
			}
			pending = kept
			for _, g := range granted {
				for _, w := range pending {
					if (order == bulkhead.FIFO) == (w.seq < g.seq) {
						w.charged += g.k
						if w.charged > limit {
							t.Fatalf("seed %d, %s, limit %d, op %d: calls granted past a waiter of weight %d took %d permits, more than the limit", seed, order, limit, op, w.k, w.charged)
						}
					}
				}
			}
			m := s.Metrics()
			heaviest := 0
			for _, c := range pending {
				heaviest = max(heaviest, c.k)
			}
			if m.QueuedCalls != len(pending) || (len(pending) > 0 && m.AvailableConcurrentCalls >= heaviest) {
				t.Fatalf("seed %d, %s, op %d: %+v with %d pending, the heaviest of weight %d: a call that fits waits", seed, order, op, m, len(pending), heaviest)
			}
		}
		for _, c := range pending {
			c.a.Cancel()
			if c.a.Granted() {
				held = append(held, c)
			}
		}
		for _, c := range held {
			s.Call(c.k).FinishCall()
		}
	}
}
