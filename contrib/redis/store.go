package redis

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// Store connects the fleet bulkheads of one process to Redis. It runs a
// fixed set of goroutines, whatever the number of bulkheads, waiters and
// leases:
//   - the dispatcher sends the requests, releases and withdrawals of every
//     bulkhead in one pipelined round trip at a time (one script per
//     bulkhead with work), probes Redis while it is unreachable;
//   - the delivery goroutine runs the callbacks of the grants and
//     rejections those round trips decide, so that a slow callback never
//     delays Redis traffic;
//   - the renewal loop extends every lease and ticket of the process in one
//     pipelined round trip per RenewInterval;
//   - the subscriber listens on the release channels (one PSUBSCRIBE).
//
// A Store does not own its client: Close stops the goroutines, and the
// caller closes the client afterwards.
type Store struct {
	client   goredis.UniversalClient
	cfg      StoreConfig
	idPrefix string
	nextID   atomic.Uint64
	down     atomic.Bool // Redis unreachable: the Policy of each bulkhead applies
	kickc    chan struct{}
	done     chan struct{}
	closed   atomic.Bool
	wg       sync.WaitGroup
	// lingering: a kickSoon timer is armed.
	lingering atomic.Bool

	mu        sync.Mutex
	bulkheads map[string]*Bulkhead
	list      atomic.Pointer[[]*Bulkhead] // copy-on-write, read by the loops

	deliveries deliveryQueue
}

// NewStore returns a Store over client and starts its goroutines. It fails
// if client is nil or cfg is invalid; it does no I/O (see Bulkhead.Check).
func NewStore(client goredis.UniversalClient, cfg StoreConfig) (*Store, error) {
	if client == nil {
		return nil, errors.New("redis: NewStore: client must not be nil")
	}
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
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
		bulkheads: make(map[string]*Bulkhead),
	}
	s.deliveries.init()
	ctx, cancel := context.WithCancel(context.Background())
	ps := client.PSubscribe(ctx) // no pattern yet: no I/O
	s.wg.Add(5)
	go func() { defer s.wg.Done(); s.dispatch() }()
	go func() { defer s.wg.Done(); s.deliveries.run(s.done) }()
	go func() { defer s.wg.Done(); s.renewLoop() }()
	go func() { defer s.wg.Done(); s.subscribe(ctx, ps) }()
	go func() {
		// A blocked read ignores ctx: closing the PubSub ends it.
		defer s.wg.Done()
		<-s.done
		cancel()
		_ = ps.Close()
	}()
	return s, nil
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

// kickSoon wakes the dispatcher within releaseLinger (one timer at a time).
func (s *Store) kickSoon() {
	if s.lingering.CompareAndSwap(false, true) {
		time.AfterFunc(releaseLinger, func() {
			s.lingering.Store(false)
			s.kick()
		})
	}
}

// Available reports whether Redis answered the last round trip (false
// while the Policy of each bulkhead applies).
func (s *Store) Available() bool { return !s.down.Load() }

// Close stops the Store: every call still waiting is rejected with an
// error matching ErrClosed, the leases still held are given back in one
// round trip (their holders' later FinishCall or ReleasePermission do
// nothing), and the goroutines stop before Close returns. Close does not
// close the client. It is idempotent.
func (s *Store) Close() error {
	s.mu.Lock() // add checks closed under mu: no bulkhead is added from now on
	first := s.closed.CompareAndSwap(false, true)
	s.mu.Unlock()
	if !first {
		return nil
	}
	close(s.done)
	s.wg.Wait()
	var works []*work
	for _, b := range s.all() {
		if w := b.close(); w != nil {
			works = append(works, w)
		}
	}
	// Outcomes decided but not delivered: the grants' leases were given
	// back by close, so they are rejected too.
	for _, d := range s.deliveries.take() {
		if d.err == nil {
			d.err = d.p.b.errClosed
		}
		deliver(d)
	}
	if len(works) > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), s.cfg.Timeout)
		defer cancel()
		if err := s.exec(ctx, works); err != nil && !unreachable(err) {
			return fmt.Errorf("redis: Close: giving back leases: %w", err)
		}
	}
	return nil
}

// dispatch is the dispatcher goroutine. Polls and probes are due by the
// clock, not by the timer alone, so that a steady stream of kicks cannot
// postpone them.
func (s *Store) dispatch() {
	t := time.NewTimer(s.cfg.PollInterval)
	defer t.Stop()
	nextPoll := time.Now().Add(s.cfg.PollInterval)
	nextProbe := time.Now()
	for {
		due := nextPoll
		if s.down.Load() {
			due = nextProbe
		}
		t.Reset(max(0, time.Until(due)))
		select {
		case <-s.done:
			return
		case <-s.kickc:
		case <-t.C:
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
		for s.round() {
		}
		if s.down.Load() {
			nextProbe = time.Now().Add(s.cfg.ProbeInterval)
		}
	}
}

// probe tries Redis once; on success the bulkheads leave their Policy.
func (s *Store) probe() bool {
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.Timeout)
	defer cancel()
	if err := s.client.Ping(ctx).Err(); err != nil {
		return false
	}
	s.down.Store(false)
	return true
}

// markDown switches every bulkhead to its Policy.
func (s *Store) markDown() {
	if s.down.CompareAndSwap(false, true) {
		for _, b := range s.all() {
			b.storeDown()
		}
	}
}

// round makes one round trip for every bulkhead with work and reports
// whether more work is left at once.
func (s *Store) round() bool {
	var works []*work
	for _, b := range s.all() {
		if w := b.collect(); w != nil {
			works = append(works, w)
		}
	}
	if len(works) == 0 {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.Timeout)
	err := s.exec(ctx, works)
	cancel()
	if err != nil && unreachable(err) {
		for _, w := range works {
			w.b.fail(w, err)
		}
		s.markDown()
		return false
	}
	more := false
	for _, w := range works {
		if w.err != nil {
			w.b.fail(w, w.err)
		} else if w.b.apply(w) {
			more = true
		}
	}
	return more
}

// exec runs the round script of every work in one pipeline. A transport
// error is returned; a script error is left in its work's err.
func (s *Store) exec(ctx context.Context, works []*work) error {
	if err := s.run(ctx, works); err != nil {
		return err
	}
	var again []*work
	for _, w := range works {
		if goredis.HasErrorPrefix(w.err, "NOSCRIPT") {
			again = append(again, w)
		}
	}
	if len(again) == 0 {
		return nil
	}
	// Redis restarted or flushed its scripts: load them and run again the
	// works that did not run.
	if err := loadScripts(ctx, s.client); err != nil {
		if unreachable(err) {
			return err
		}
		for _, w := range again {
			w.err = err
		}
		return nil
	}
	return s.run(ctx, again)
}

func (s *Store) run(ctx context.Context, works []*work) error {
	if len(works) == 1 {
		w := works[0]
		w.reply, w.err = roundScript.EvalSha(ctx, s.client, w.b.keys.list, w.args...).Int64Slice()
		if unreachable(w.err) {
			return w.err
		}
		return nil
	}
	cmds := make([]*goredis.Cmd, len(works))
	_, err := s.client.Pipelined(ctx, func(p goredis.Pipeliner) error {
		for i, w := range works {
			cmds[i] = roundScript.EvalSha(ctx, p, w.b.keys.list, w.args...)
		}
		return nil
	})
	if err != nil && unreachable(err) {
		return err
	}
	for i, w := range works {
		w.reply, w.err = cmds[i].Int64Slice()
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
