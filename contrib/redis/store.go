package redis

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/internal/publish"
)

// Store connects the fleet bulkheads of one process to Redis. It runs a
// fixed set of goroutines, whatever the number of bulkheads, waiters and
// leases:
//   - the dispatcher sends the requests, releases and withdrawals of every
//     bulkhead in one pipelined round trip at a time (one script per
//     bulkhead with work), probes Redis while it is unreachable;
//   - the delivery goroutine runs the callbacks of the grants and
//     rejections those round trips decide, so that a slow callback never
//     delays Redis traffic (one that calls runtime.Goexit ends it, and
//     another takes its place: runDeliveries);
//   - the renewal loop extends every lease and ticket of the process in one
//     pipelined round trip per RenewInterval;
//   - the subscriber listens on the release channels (one PSUBSCRIBE, on a
//     connection of the Store's own: NewStore).
//
// Every round trip is bounded by StoreConfig.Timeout whatever the client's
// options. The dispatcher makes its round trips on its own goroutine,
// watched by a timer that replaces it with a new goroutine if one stalls
// (roundTrip); the other round trips (renewals, probes, Close,
// FleetMetrics, ChangeConfig) each run on a short-lived goroutine of their
// own (bounded.go). Either way the loop goes on after Timeout without the
// stalled round trip.
//
// A Store does not own its client: Close stops the goroutines, and the
// caller closes the client afterwards.
type Store struct {
	client   goredis.UniversalClient
	cfg      StoreConfig
	idPrefix string
	nextID   atomic.Uint64
	down     atomic.Bool // not up: unreachable, or refused if refusal is set (state.go)
	refusal  atomic.Pointer[refusalState]
	cause    atomic.Pointer[refusalState] // what made the Store unreachable (state.go)
	probing  atomic.Bool                  // a probe is running (bounded)
	renewing atomic.Bool                  // a renewal is running (bounded)
	pub      publish.Listeners[StoreEvent]
	kickc    chan struct{}
	done     chan struct{}
	closed   atomic.Bool
	// closeDone is closed once the first Close has stopped the goroutines
	// and its give-back has ended; closeErr, written before, is its result.
	closeDone chan struct{}
	closeErr  error
	wg        sync.WaitGroup
	// lingering: the linger timer is armed (kickSoon). lingered: a release
	// waits for the next round trip; round clears it before collecting.
	lingering, lingered atomic.Bool
	linger              *time.Timer

	mu        sync.Mutex
	bulkheads map[string]*Bulkhead
	list      atomic.Pointer[[]*Bulkhead] // copy-on-write, read by the loops

	deliveries deliveryQueue
	// ctx is the parent of the contexts of round trips: it carries the
	// Store for Logger.
	ctx context.Context
}

// NewStore returns a Store over client and starts its goroutines. It fails
// if client is nil or a *goredis.Ring (whose shards do not share pub/sub),
// or cfg is invalid; it does no I/O (see Bulkhead.Check).
//
// The Store's subscription (one PSUBSCRIBE, see Store) does not take a
// connection of client's pools: for a *goredis.Client (Sentinel's failover
// client included) or a *goredis.ClusterClient, the Store makes a client of
// its own with client's options (address or Sentinel master, TLS,
// credentials, Dialer, timeouts, OnConnect), which holds the one
// subscription connection, so that Close can close that connection
// whatever state it is in. That client has no client-side cache, no
// maintenance notifications and no pipeline pool, and hooks added to
// client with AddHook do not see its connection. Close closes it. Any
// other UniversalClient subscribes through client.PSubscribe.
//
// A dial under way gets a context that Close cancels, which ends a TCP
// connect at once, and the TLS handshake too: go-redis's default dialer
// (Options.TLSConfig set, Options.Dialer nil) makes the handshake without
// the context, so the Store's client dials instead with a dialer of its
// own that does the same (DialTimeout, go-redis's TCP keep-alive, the same
// tls.Config, ServerName taken from the address by crypto/tls when empty)
// but hands the handshake the context.
//
// What Close cannot cut short: a Dialer of the caller's that ignores its
// context, the TLS handshake of Sentinel's failover client when
// FailoverOptions.Dialer is nil (go-redis's failover dialer makes it
// without the context), and a Sentinel lookup, bounded by the Sentinel
// client's own timeouts; until such a dial returns, Close waits, up to the
// client's DialTimeout for a handshake.
func NewStore(client goredis.UniversalClient, cfg StoreConfig) (*Store, error) {
	if client == nil {
		return nil, errors.New("redis: NewStore: client must not be nil")
	}
	if _, ok := client.(*goredis.Ring); ok {
		// A grant's release is published on the shard of its bulkhead's
		// keys; one subscription cannot hear every shard.
		return nil, errors.New("redis: NewStore: a *redis.Ring is not supported (its shards do not share pub/sub); use a Client, a failover client or a ClusterClient")
	}
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if _, ok := client.(*goredis.ClusterClient); ok && cfg.WaitReplicas > 0 {
		return nil, errors.New("redis: invalid StoreConfig: WaitReplicas must be 0 with a ClusterClient (WAIT concerns one master)")
	}
	var rnd [6]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return nil, fmt.Errorf("redis: NewStore: %w", err)
	}
	s := &Store{
		client: client, cfg: cfg,
		idPrefix:  hex.EncodeToString(rnd[:]) + "-" + strconv.Itoa(os.Getpid()) + ":",
		kickc:     make(chan struct{}, 1),
		done:      make(chan struct{}),
		closeDone: make(chan struct{}),
		bulkheads: make(map[string]*Bulkhead),
	}
	s.deliveries.init()
	s.ctx = context.WithValue(context.Background(), storeKey{}, s)
	s.linger = time.AfterFunc(time.Hour, s.lingerFired)
	s.linger.Stop()
	stores.Store(s, clientAddrs(client))
	ctx, cancel := context.WithCancel(context.Background())
	sub := newSubscription(ctx, client) // no pattern yet: no I/O
	s.wg.Add(5)
	s.startDispatcher(nil)
	go s.runDeliveries()
	go func() { defer s.wg.Done(); s.renewLoop() }()
	go func() { defer s.wg.Done(); s.subscribe(ctx, sub.ps) }()
	go func() {
		// A blocked read or handshake ignores ctx: closing the
		// subscription's connections ends it at once (subscription).
		defer s.wg.Done()
		<-s.done
		cancel()
		sub.close()
	}()
	return s, nil
}

// runDeliveries is the delivery goroutine. User code it runs (an
// Acquisition's callback, a listener) that calls runtime.Goexit (t.FailNow
// in a test's callback does) ends it: a new goroutine then takes over its
// wg count and carries on with the outcomes not yet delivered, so that no
// call waits for ever. A panic there is not recovered: it ends the
// program, as any panic in a goroutine does.
func (s *Store) runDeliveries() {
	returned := false
	defer func() {
		if !returned {
			go s.runDeliveries()
			return
		}
		s.wg.Done()
	}()
	s.deliveries.run(s.done)
	returned = true
}

// id is the lease and ticket id of request number n of this process.
func (s *Store) id(n uint64) string { return s.idPrefix + strconv.FormatUint(n, 36) }

func (s *Store) add(b *Bulkhead) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Load() {
		return fmt.Errorf("redis: NewBulkhead(%q): %w", b.name, ErrClosed)
	}
	if _, ok := s.bulkheads[b.name]; ok {
		return fmt.Errorf("redis: NewBulkhead(%q): this Store already has a bulkhead of that name", b.name)
	}
	s.bulkheads[b.name] = b
	l := make([]*Bulkhead, 0, len(s.bulkheads))
	if cur := s.list.Load(); cur != nil {
		l = append(l, *cur...)
	}
	l = append(l, b)
	s.list.Store(&l)
	return nil
}

// retire frees the name of an evicted bulkhead (a new one may take it at
// once) and wakes the dispatcher, which sends what b still owes Redis and
// then drops it (round, drop).
func (s *Store) retire(b *Bulkhead) {
	s.mu.Lock()
	if s.bulkheads[b.name] == b {
		delete(s.bulkheads, b.name)
	}
	s.mu.Unlock()
	s.kick()
}

// drop removes retired bulkheads from the loops' list (dispatcher
// goroutine): no round trip, renewal or probe concerns them any more.
func (s *Store) drop(gone []*Bulkhead) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := s.all()
	l := make([]*Bulkhead, 0, len(cur))
	for _, b := range cur {
		if !slices.Contains(gone, b) {
			l = append(l, b)
		}
	}
	s.list.Store(&l)
}

func (s *Store) all() []*Bulkhead {
	if l := s.list.Load(); l != nil {
		return *l
	}
	return nil
}

// kick wakes the dispatcher (a pending kick is enough).
func (s *Store) kick() {
	select {
	case s.kickc <- struct{}{}:
	default:
	}
}

// releaseLinger is how long a release may wait for the next round trip
// when nobody is known to wait for the permit.
const releaseLinger = time.Millisecond

// kickSoon wakes the dispatcher within releaseLinger (one timer at a time,
// reused), unless a round trip took the release meanwhile: the next
// acquisition usually carries it, and then the dispatcher is not woken
// for nothing.
func (s *Store) kickSoon() {
	s.lingered.Store(true)
	if s.lingering.CompareAndSwap(false, true) {
		s.linger.Reset(releaseLinger)
	}
}

func (s *Store) lingerFired() {
	s.lingering.Store(false)
	if s.lingered.Load() {
		s.kick()
	}
}

// Available reports whether the Store is up: false while Redis cannot be
// reached (the Policy of each bulkhead applies) and while it refuses the
// credentials or ACL (every call is rejected; see ErrRefused).
func (s *Store) Available() bool { return !s.down.Load() }

// Close stops the Store: every call still waiting (on Redis, or on the
// FailOver semaphore while Redis is away) is rejected with an error
// matching ErrClosed, the leases still held are given back in one
// round trip (their holders' later FinishCall or ReleasePermission do
// nothing; one under way as Close runs, its CallFinished listeners
// running, say, has its lease given back by Close too), and the
// goroutines stop before Close returns. Close does not
// close the client. It returns within about twice StoreConfig.Timeout
// even if Redis stalls (the round trip under way, then the one that gives
// back the leases), at any moment, the subscription's handshake included:
// Close closes the subscription's connection itself (see NewStore, which
// also says what a dial under way costs). A round trip abandoned then ends
// when go-redis gives up on it or the client is closed. (With a
// UniversalClient other than *goredis.Client and *goredis.ClusterClient,
// the subscription is the client's own, and a stall during its handshake
// holds Close up to the client's ReadTimeout.)
//
// Close returns an error if Redis answered the give-back with an error
// (an ACL that refuses the script, say): those leases then stay until
// LeaseTTL. Redis unreachable or stalled is no error: the leases expire
// by LeaseTTL, as those of a process that died.
//
// Close is idempotent, and safe to call from several goroutines at once
// (a signal handler and a deferred Close at shutdown, say): a Close made
// while another is under way, or after it, returns only once the
// goroutines have stopped and the give-back round trip has ended, with
// the first Close's error, so that the client may be closed as soon as
// any Close returns. The rejections of the calls still waiting, and their
// callbacks, run on the first Close's goroutine, which returns after them;
// a callback among them that calls Close (first or not) gets the same
// result once the give-back has ended, without waiting for itself.
//
// Because Close waits for the Store's goroutines, it must not be called on
// one of them. Called from user code the Store runs (the OnDone callbacks
// of a call decided by a round trip and the Bulkhead and Registry OnEvent
// listeners of its events, on the delivery goroutine; a Store.OnEvent
// listener of StoreDown, StoreRefused or StoreUp, on the dispatcher),
// Close never returns (that goroutine waits for itself), and neither does
// a Close made on another goroutine, before or after it: the calls still
// waiting are never decided, nor the leases given back. There, start it
// on a goroutine of its own, go s.Close(), and return: it closes the Store
// once the callback has returned.
func (s *Store) Close() error {
	s.mu.Lock() // add checks closed under mu: no bulkhead is added from now on
	first := s.closed.CompareAndSwap(false, true)
	s.mu.Unlock()
	if !first {
		<-s.closeDone
		return s.closeErr
	}
	close(s.done)
	s.linger.Stop()
	s.wg.Wait()
	stores.Delete(s)
	var works []*work
	var thens []func()
	for _, b := range s.all() {
		w, then := b.close()
		if w != nil {
			works = append(works, w)
		}
		thens = append(thens, then)
	}
	// Outcomes decided but not delivered: the grants' leases are given
	// back with the works above, so they are rejected too.
	ds := s.deliveries.take()
	// The give-back runs on a goroutine of its own, which closes closeDone
	// when it ends, before any user code runs here: a Close from a
	// rejection's callback waits for the give-back, not for this goroutine.
	if len(works) == 0 {
		close(s.closeDone)
	} else {
		go func() {
			defer close(s.closeDone)
			s.closeErr = s.giveBack(works)
		}()
	}
	for _, then := range thens {
		then()
	}
	for _, d := range ds {
		if d.err == nil {
			d.err, d.reason = d.p.b.errs().closed, bulkhead.Unavailable
		}
		deliver(d)
	}
	<-s.closeDone
	return s.closeErr
}

// giveBack makes Close's round trip, bounded by Timeout (a stalled Redis
// does not hold Close), and returns the error Close reports: the first
// error Redis answered, nil if Redis was unreachable or stalled.
func (s *Store) giveBack(works []*work) error {
	err := s.bounded(context.Background(), nil, func(ctx context.Context) error {
		res, err := s.exec(ctx, works)
		if err != nil {
			return err
		}
		for i, r := range res {
			if r.err != nil && !unreachable(r.err) {
				return fmt.Errorf("bulkhead %q: %w", works[i].b.name, r.err)
			}
		}
		return nil
	})
	if err != nil && !unreachable(err) {
		return fmt.Errorf("redis: Close: giving back leases: %w", err)
	}
	return nil
}

// dispatch is the dispatcher's loop. Polls and probes are due by the
// clock, not by the timer alone, so that a steady stream of kicks cannot
// postpone them. It returns true when the Store closes, false when the
// watchdog took the dispatcher's place from this goroutine (round): its
// round trip stalled, and a new goroutine runs the loop (startDispatcher).
func (s *Store) dispatch() bool {
	t := time.NewTimer(s.cfg.PollInterval)
	defer t.Stop()
	nextPoll := time.Now().Add(s.cfg.PollInterval)
	nextProbe := time.Now()
	if s.down.Load() {
		nextProbe = nextProbe.Add(s.cfg.ProbeInterval) // a replacement: the stall was just noticed
	}
	for {
		due := nextPoll
		if s.down.Load() {
			due = nextProbe
		}
		t.Reset(max(0, time.Until(due)))
		select {
		case <-s.done:
			return true
		case <-s.kickc:
		case <-t.C:
		}
		// select chooses at random among ready cases: done may have been
		// closed with the timer or a kick also ready. Stop rather than
		// start a probe or round trip (up to Timeout each) that Close,
		// waiting for this goroutine, would wait for too.
		select {
		case <-s.done:
			return true
		default:
		}
		now := time.Now()
		if s.down.Load() {
			if now.Before(nextProbe) {
				continue
			}
			nextProbe = now.Add(s.cfg.ProbeInterval)
			if !s.probe() {
				continue
			}
			for _, b := range s.all() {
				b.setWake()
			}
		} else if !now.Before(nextPoll) {
			nextPoll = now.Add(s.cfg.PollInterval)
			for _, b := range s.all() {
				b.setWakeIfWaiting()
			}
		}
		for {
			more, replaced := s.round()
			if replaced {
				return false
			}
			if !more {
				break
			}
		}
		if s.down.Load() {
			nextProbe = time.Now().Add(s.cfg.ProbeInterval)
		}
	}
}

// startDispatcher starts a dispatcher goroutine, which holds one count of
// s.wg until the Store closes. A replacement (stalled not nil) first
// applies the failure of the round trip its predecessor is stuck in.
func (s *Store) startDispatcher(stalled *roundTrip) {
	go func() {
		if stalled != nil {
			s.failRound(stalled.works, stallError{s.cfg.Timeout})
		}
		if s.dispatch() {
			s.wg.Done()
		}
		// Replaced: the count of s.wg went to the replacement.
	}()
}

// roundTrip is one round trip of the dispatcher, watched for a stall.
//
// The dispatcher makes the round trip on its own goroutine: no goroutine
// is started and no stack grows per round trip. Timeout is enforced by a
// watchdog (context.AfterFunc on the round trip's context, whose deadline
// is Timeout): if the round trip has not returned by then, the watchdog
// takes the dispatcher's place: it starts a new dispatcher goroutine,
// which fails the round's calls as an unreachable Redis and goes on with
// the loop, while the stalled goroutine, once go-redis returns, gives back
// by id what its round trip granted (late) and ends.
//
// One CAS on state decides between the two endings: the dispatcher's
// (running -> finished, it applies the result) and the watchdog's
// (running -> abandoned, a replacement applies the failure).
type roundTrip struct {
	works []*work
	state atomic.Int32
}

const (
	rtRunning int32 = iota
	rtFinished
	rtAbandoned
)

// round makes one round trip for every bulkhead with work and reports
// whether more work is left at once, or that the watchdog replaced this
// goroutine (replaced: it must stop dispatching).
func (s *Store) round() (more, replaced bool) {
	var works []*work
	var gone []*Bulkhead
	// Before collecting: a release appended after this is either taken by
	// this round or sets the flag again (giveBack appends, then kickSoon).
	s.lingered.Store(false)
	for _, b := range s.all() {
		w, g := b.collect()
		if w != nil {
			works = append(works, w)
		}
		if g {
			gone = append(gone, b)
		}
	}
	if gone != nil {
		s.drop(gone)
	}
	if len(works) == 0 {
		return false, false
	}
	rt := &roundTrip{works: works}
	ctx, cancel := context.WithTimeout(s.ctx, s.cfg.Timeout)
	stop := context.AfterFunc(ctx, func() {
		if ctx.Err() == context.DeadlineExceeded && rt.state.CompareAndSwap(rtRunning, rtAbandoned) {
			s.startDispatcher(rt)
		}
	})
	res, err := s.exec(ctx, works)
	stop()
	cancel()
	if !rt.state.CompareAndSwap(rtRunning, rtFinished) {
		// Abandoned, and returned at last: whatever it may have granted
		// (even with an error: the script may have run and the reply been
		// lost) is given back by id again, now that it cannot run later.
		for _, w := range works {
			w.b.giveBackLate(w.reqs, nil)
		}
		s.kick()
		return false, true
	}
	if err != nil && unreachable(err) {
		s.failRound(works, err)
		return false, false
	}
	var refusal error
	for i, w := range works {
		w.reply, w.err = res[i].reply, res[i].err
		if w.err != nil {
			w.b.fail(w, w.err)
			if refusal == nil && refused(w.err) {
				refusal = w.err
			}
		} else if w.b.apply(w) {
			more = true
		}
	}
	if refusal != nil {
		s.markRefused(refusal)
		return false, false
	}
	return more, false
}

// failRound applies a round trip that found Redis unreachable.
func (s *Store) failRound(works []*work, err error) {
	for _, w := range works {
		w.b.fail(w, err)
	}
	s.markDown(err)
}

// result is the outcome of one work's script.
type result struct {
	reply []int64
	err   error
}

// exec runs the round script of every work in one pipeline and returns
// their results in order. A transport error is returned; a script error is
// left in its result. It reads works and writes nothing else, so that an
// exec abandoned by the watchdog (or by bounded) races with nobody.
func (s *Store) exec(ctx context.Context, works []*work) ([]result, error) {
	res := make([]result, len(works))
	if err := s.run(ctx, works, res); err != nil {
		return nil, err
	}
	var again []*work
	var at []int
	for i := range works {
		if goredis.HasErrorPrefix(res[i].err, "NOSCRIPT") {
			again = append(again, works[i])
			at = append(at, i)
		}
	}
	if len(again) == 0 {
		return res, nil
	}
	// Redis restarted or flushed its scripts: load them and run again the
	// works that did not run.
	if err := loadScripts(ctx, s.client); err != nil {
		if unreachable(err) {
			return nil, err
		}
		for _, i := range at {
			res[i].err = err
		}
		return res, nil
	}
	res2 := make([]result, len(again))
	if err := s.run(ctx, again, res2); err != nil {
		return nil, err
	}
	for j, i := range at {
		res[i] = res2[j]
	}
	return res, nil
}

func (s *Store) run(ctx context.Context, works []*work, res []result) error {
	wait := false
	if s.cfg.WaitReplicas > 0 {
		for _, w := range works {
			wait = wait || len(w.reqs) > 0
		}
	}
	if len(works) == 1 && !wait {
		w := works[0]
		res[0].reply, res[0].err = roundScript.EvalSha(ctx, s.client, w.b.keys.list, w.args...).Int64Slice()
		if unreachable(res[0].err) {
			return res[0].err
		}
		return nil
	}
	cmds := make([]*goredis.Cmd, len(works))
	var acks *goredis.Cmd
	_, err := s.client.Pipelined(ctx, func(p goredis.Pipeliner) error {
		for i, w := range works {
			cmds[i] = roundScript.EvalSha(ctx, p, w.b.keys.list, w.args...)
		}
		if wait {
			acks = p.Do(ctx, "WAIT", s.cfg.WaitReplicas, max(1, (s.cfg.Timeout/2).Milliseconds()))
		}
		return nil
	})
	if err != nil && unreachable(err) {
		return err
	}
	if wait {
		if n, err := acks.Int64(); err != nil || n < int64(s.cfg.WaitReplicas) {
			return notReplicatedError{got: n, want: s.cfg.WaitReplicas, err: err}
		}
	}
	for i := range works {
		res[i].reply, res[i].err = cmds[i].Int64Slice()
	}
	return nil
}

func loadScripts(ctx context.Context, c goredis.Scripter) error {
	for _, sc := range allScripts {
		if err := sc.Load(ctx, c).Err(); err != nil {
			return err
		}
	}
	return nil
}
