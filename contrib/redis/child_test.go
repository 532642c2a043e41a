package redis_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/rxbulkhead/bulkhead"

	rxredis "github.com/rxbulkhead/bulkhead/contrib/redis"
)

// A test re-executes its own binary as child processes (several OS
// processes sharing one fleet bulkhead). The child's role and parameters
// travel in the environment; it prints one JSON line of results.

// childParams is what a child gets from its parent.
type childParams struct {
	Addr  string
	Addrs []string // a Redis Cluster: the children use a ClusterClient
	// Sentinel: the children use a failover client of MasterName, WAIT for
	// WaitReplicas, and count holders on CounterAddr (a server of its own).
	SentinelAddrs []string
	MasterName    string
	CounterAddr   string
	WaitReplicas  int
	// MaxAllowed, if set, is the holder count above which the hammer
	// counts a violation (the limit stored in Redis may exceed Permits);
	// every count above Permits is also reported (Over).
	MaxAllowed int
	Prefix     string
	Name       string
	Permits    int
	Duration   time.Duration
	Workers    int
	Hold       int    // holder: permits to take and hold until killed
	Counter    string // hammer: the key of the independent holder counter
	LeaseTTL   time.Duration
	Renew      time.Duration
	Seed       uint64
	Index      int   // eventloop: this child's share of the clients
	Procs      int   // eventloop: number of children
	Start      int64 // eventloop: common start, Unix nanoseconds
	// KillAt (Unix ns): hammer: when the parent kills a server; the child
	// reports when callers saw the fleet again after it.
	KillAt int64
	// AfterKill, with KillAt: the hammer stops AfterKill after its first
	// grant after the kill (the fleet is back: AfterKill of calls on the
	// recovered fleet) instead of running all of Duration, which bounds a
	// run that never sees the fleet again.
	AfterKill time.Duration
	// MinGrants, if set: the hammer goes on after Duration until it has
	// made MinGrants grants, one wait timeout and one cancel, for at most
	// Duration + outcomeTimeout, so that a test asserting every outcome
	// does not fail because a loaded machine ran the child too little.
	MinGrants int64
}

// childResult is what a child reports.
type childResult struct {
	Grants, Cancels, Timeouts, Rejections, Violations int64
	MaxHolders                                        int64
	LeasesLost                                        int
	Tokens                                            []int64
	Over                                              []int64 // Unix ns of counts above Permits (at most 5000)
	Limit                                             int     // the bulkhead's fleet limit at the end
	// Unavailable counts the rejections matching ErrUnavailable (among
	// Rejections); Other lists the other rejections' errors (at most 20).
	Unavailable int64
	Other       []string
	// With KillAt: grants after it, the first one (Unix ns), and the last
	// ErrUnavailable rejection (Unix ns).
	GrantsAfterKill                      int64
	FirstGrantAfterKill, LastUnavailable int64
	Err                                  string
}

// startChild starts the test binary in role with p; the child is killed at
// the end of the test if still running.
func startChild(t testing.TB, role string, p childParams) (*exec.Cmd, *bufio.Scanner) {
	t.Helper()
	js, _ := json.Marshal(p)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+role, "RXBULKHEAD_REDIS_PARAMS="+string(js))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	return cmd, bufio.NewScanner(out)
}

// readResult reads the child's JSON line.
func readResult(t testing.TB, sc *bufio.Scanner) childResult {
	t.Helper()
	for sc.Scan() {
		var r childResult
		if json.Unmarshal(sc.Bytes(), &r) == nil {
			if r.Err != "" {
				t.Errorf("child: %s", r.Err)
			}
			return r
		}
	}
	t.Fatal("child ended without a result line")
	return childResult{}
}

func runChild(role string) int {
	var p childParams
	if err := json.Unmarshal([]byte(os.Getenv("RXBULKHEAD_REDIS_PARAMS")), &p); err != nil {
		fmt.Fprintln(os.Stderr, "child: bad params:", err)
		return 2
	}
	var res childResult
	var err error
	switch role {
	case "hammer":
		res, err = hammerChild(p)
	case "holder":
		res, err = holderChild(p)
	case "queuer":
		res, err = queuerChild(p)
	case "eventloop":
		res, err = eventLoopChild(p)
	default:
		err = fmt.Errorf("unknown role %q", role)
	}
	if err != nil {
		res.Err = err.Error()
	}
	js, _ := json.Marshal(res)
	fmt.Println(string(js))
	return 0
}

func childStore(p childParams) (goredis.UniversalClient, *rxredis.Store, error) {
	var c goredis.UniversalClient
	if p.MasterName != "" {
		c = goredis.NewFailoverClient(&goredis.FailoverOptions{MasterName: p.MasterName, SentinelAddrs: p.SentinelAddrs,
			DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second, ContextTimeoutEnabled: true, MaxRetries: -1, DialerRetries: 1})
	} else if len(p.Addrs) > 0 {
		c = goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: p.Addrs, ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second})
	} else {
		c = goredis.NewClient(&goredis.Options{Addr: p.Addr, ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second})
	}
	cfg := rxredis.StoreConfig{KeyPrefix: p.Prefix, LeaseTTL: p.LeaseTTL, RenewInterval: p.Renew, PollInterval: 20 * time.Millisecond}
	if p.MasterName != "" {
		cfg.WaitReplicas, cfg.ProbeInterval, cfg.Timeout = p.WaitReplicas, 50*time.Millisecond, 500*time.Millisecond
	}
	s, err := rxredis.NewStore(c, cfg)
	if err != nil {
		c.Close()
		return nil, nil, err
	}
	return c, s, nil
}

// hammerChild acquires, cancels, times out and releases with p.Workers
// goroutines for p.Duration. Around each critical section it increments
// an independent Redis counter: a value above p.Permits is a violation.
func hammerChild(p childParams) (childResult, error) {
	var res childResult
	c, s, err := childStore(p)
	if err != nil {
		return res, err
	}
	defer c.Close()
	b, err := rxredis.NewBulkhead(s, p.Name, rxredis.Config{Config: bulkhead.Config{
		MaxConcurrentCalls: p.Permits, MaxWaitDuration: 30 * time.Millisecond, MaxQueuedCalls: 64}})
	if err != nil {
		return res, err
	}
	counter := c
	if p.CounterAddr != "" {
		cc := goredis.NewClient(&goredis.Options{Addr: p.CounterAddr})
		defer cc.Close()
		counter = cc
	}
	allowed := p.Permits
	if p.MaxAllowed > 0 {
		allowed = p.MaxAllowed
	}
	var overMu sync.Mutex // and the fields below
	var over []int64
	var other []string
	var unavailable, grantsAfter, firstAfter, lastUnavailable int64
	var grants, cancels, timeouts, rejections, violations, maxHolders atomic.Int64
	ctx := context.Background()
	stop := time.Now().Add(p.Duration)
	hardStop := stop.Add(outcomeTimeout)
	var recovered atomic.Int64 // Unix ns of the first grant after KillAt
	running := func() bool {
		now := time.Now()
		if p.AfterKill > 0 {
			r := recovered.Load()
			return now.Before(stop) && (r == 0 || now.UnixNano() < r+p.AfterKill.Nanoseconds())
		}
		if now.Before(stop) {
			return true
		}
		exercised := grants.Load() >= p.MinGrants && (p.MinGrants == 0 || timeouts.Load() > 0 && cancels.Load() > 0)
		return !exercised && now.Before(hardStop)
	}
	var wg sync.WaitGroup
	for w := range p.Workers {
		rng := rand.New(rand.NewPCG(p.Seed, uint64(w)))
		wg.Go(func() {
			for running() {
				// Both styles in one process: a Permit of Acquire given back
				// by its own Finish, the others by FinishCall and
				// ReleasePermission (which must never take a Permit).
				var typed *rxredis.Permit
				var a *bulkhead.Acquisition
				if rng.IntN(3) == 0 {
					typed = b.Acquire()
					a = typed.Acquisition()
				} else {
					a = b.AcquirePermissionAsync()
				}
				if rng.IntN(4) == 0 {
					// Cancel right away or after a short while.
					if rng.IntN(2) == 0 {
						time.Sleep(time.Duration(rng.IntN(500)) * time.Microsecond)
					}
					if a.Cancel() {
						cancels.Add(1)
						continue
					}
				}
				<-a.Done()
				if err := a.Err(); err != nil {
					if fe, ok := err.(*bulkhead.FullError); ok && fe.Reason == bulkhead.WaitTimeout {
						timeouts.Add(1)
					} else {
						rejections.Add(1)
						overMu.Lock()
						if errors.Is(err, rxredis.ErrUnavailable) {
							unavailable++
							lastUnavailable = max(lastUnavailable, time.Now().UnixNano())
						} else if len(other) < 20 {
							other = append(other, err.Error())
						}
						overMu.Unlock()
						time.Sleep(time.Millisecond) // Redis away: no busy loop
					}
					continue
				}
				grants.Add(1)
				if p.KillAt > 0 {
					if now := time.Now().UnixNano(); now > p.KillAt {
						overMu.Lock()
						if grantsAfter++; firstAfter == 0 || now < firstAfter {
							firstAfter = now
							recovered.CompareAndSwap(0, now)
						}
						overMu.Unlock()
					}
				}
				n, err := counter.Incr(ctx, p.Counter).Result()
				if err == nil {
					if n > int64(allowed) {
						violations.Add(1)
					}
					if n > int64(p.Permits) && p.MaxAllowed > 0 {
						overMu.Lock()
						if len(over) < 5000 {
							over = append(over, time.Now().UnixNano())
						}
						overMu.Unlock()
					}
					for m := maxHolders.Load(); n > m && !maxHolders.CompareAndSwap(m, n); m = maxHolders.Load() {
					}
					hold := time.Duration(rng.IntN(1500)) * time.Microsecond
					if rng.IntN(8) == 0 {
						// Now and then a call outlasts MaxWaitDuration, so
						// that waiters time out however fast the machine is.
						hold = 35 * time.Millisecond
					}
					time.Sleep(hold)
					counter.Decr(ctx, p.Counter)
				}
				switch {
				case typed != nil:
					typed.Finish()
				case rng.IntN(2) == 0:
					b.FinishCall()
				default:
					b.ReleasePermission()
				}
			}
		})
	}
	wg.Wait()
	fm, _ := b.FleetMetrics(ctx)
	if err := s.Close(); err != nil {
		return res, err
	}
	res = childResult{Grants: grants.Load(), Cancels: cancels.Load(), Timeouts: timeouts.Load(), Rejections: rejections.Load(),
		Violations: violations.Load(), MaxHolders: maxHolders.Load(), LeasesLost: fm.LeasesLost,
		Over: over, Limit: b.Config().MaxConcurrentCalls,
		Unavailable: unavailable, Other: other, GrantsAfterKill: grantsAfter, FirstGrantAfterKill: firstAfter, LastUnavailable: lastUnavailable}
	return res, nil
}

// holderChild takes p.Hold permits, reports their tokens and holds them
// (renewing them) until it is killed.
func holderChild(p childParams) (childResult, error) {
	var res childResult
	c, s, err := childStore(p)
	if err != nil {
		return res, err
	}
	defer c.Close()
	b, err := rxredis.NewBulkhead(s, p.Name, fleetConfig(p.Permits, 5*time.Second))
	if err != nil {
		return res, err
	}
	for range p.Hold {
		pm := b.Acquire()
		<-pm.Acquisition().Done()
		if err := pm.Acquisition().Err(); err != nil {
			return res, err
		}
		l, _ := pm.Lease()
		res.Tokens = append(res.Tokens, l.Token)
	}
	js, _ := json.Marshal(res)
	fmt.Println(string(js))
	select {} // until SIGKILL
}

// queuerChild queues p.Hold waiting calls, reports once the fleet's queue
// holds them, and waits (renewing their tickets) until it is killed.
func queuerChild(p childParams) (childResult, error) {
	var res childResult
	c, s, err := childStore(p)
	if err != nil {
		return res, err
	}
	defer c.Close()
	b, err := rxredis.NewBulkhead(s, p.Name, fleetConfig(p.Permits, time.Minute))
	if err != nil {
		return res, err
	}
	for range p.Hold {
		b.AcquirePermissionAsync()
	}
	for deadline := time.Now().Add(outcomeTimeout); ; {
		m, err := b.FleetMetrics(context.Background())
		if err == nil && m.QueuedCalls >= p.Hold {
			break
		}
		if time.Now().After(deadline) {
			return res, fmt.Errorf("the fleet queue did not reach %d: %+v, %v", p.Hold, m, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	js, _ := json.Marshal(res)
	fmt.Println(string(js))
	select {} // until SIGKILL
}
