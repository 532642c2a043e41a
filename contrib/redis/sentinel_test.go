package redis_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	rxredis "github.com/rxbulkhead/bulkhead/contrib/redis"
)

// sentinelEnv names the sentinel binary (default redis-sentinel; empty
// and not found: the server binary in --sentinel mode, as for Valkey).
const sentinelEnv = "RXBULKHEAD_REDIS_SENTINEL"

// startSentinel starts a sentinel on a free loopback port that monitors
// the primary at port as master, with short timeouts (a failover within
// a few seconds; a shorter down-after-milliseconds makes sentinel fail
// over again and again on a loaded machine), stopped at the end of the
// test.
func startSentinel(t *testing.T, master string, port int) (addr, logfile string) {
	t.Helper()
	// $RXBULKHEAD_REDIS_SENTINEL; else, with $RXBULKHEAD_REDIS_SERVER set,
	// that server in sentinel mode; else redis-sentinel.
	bin, args := os.Getenv(sentinelEnv), []string{}
	if bin == "" && os.Getenv(serverEnv) == "" {
		bin = "redis-sentinel"
	}
	if p, err := exec.LookPath(bin); bin != "" && err == nil {
		bin = p
	} else {
		bin, args = redisServerPath(), []string{"--sentinel"}
	}
	sport, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	conf := filepath.Join(dir, "sentinel.conf")
	text := fmt.Sprintf("port %d\nbind 127.0.0.1\ndaemonize no\ndir %s\nlogfile %s\n"+
		"sentinel monitor %s 127.0.0.1 %d 1\nsentinel down-after-milliseconds %s 1000\n"+
		"sentinel failover-timeout %s 6000\nsentinel parallel-syncs %s 2\n",
		sport, dir, filepath.Join(dir, "sentinel.log"), master, port, master, master, master)
	if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, append([]string{conf}, args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	addr = "127.0.0.1:" + strconv.Itoa(sport)
	sc := goredis.NewSentinelClient(&goredis.Options{Addr: addr})
	defer sc.Close()
	eventually(t, serverStartTimeout, "sentinel knows the primary and its replicas", func() bool {
		reps, err := sc.Replicas(context.Background(), master).Result()
		return err == nil && len(reps) >= 2
	})
	return addr, filepath.Join(dir, "sentinel.log")
}

// replicaLinked waits until the server at addr replicates with its link up.
func replicaLinked(t *testing.T, addr string) {
	t.Helper()
	c := goredis.NewClient(&goredis.Options{Addr: addr})
	defer c.Close()
	eventually(t, serverStartTimeout, "replica "+addr+" linked", func() bool {
		info, err := c.Info(context.Background(), "replication").Result()
		return err == nil && strings.Contains(info, "master_link_status:up")
	})
}

// The primary is killed under load (several processes, an independent
// holder counter on a server of its own); sentinel promotes a replica.
// With WaitReplicas 1 every delivered grant was on a replica first, so the
// promoted one has it: the fleet limit holds across the failover, and
// fencing tokens never go back (the counter also never issues a number
// below the server clock in µs).
func TestSentinelFailoverUnderLoadKeepsTheLimitAndTokensIncreasing(t *testing.T) {
	// Its own servers and processes: it runs beside the other long
	// multi-process tests, after the rest (make test's time budget).
	t.Parallel()
	primary := withServer(t)
	r1 := withServer(t, "--replicaof", "127.0.0.1", strconv.Itoa(primary.Port))
	r2 := withServer(t, "--replicaof", "127.0.0.1", strconv.Itoa(primary.Port))
	replicaLinked(t, r1.Addr())
	replicaLinked(t, r2.Addr())
	const master = "rxbt-master"
	saddr, slog := startSentinel(t, master, primary.Port)

	// The Stores' subscriptions over a failover client (clients of their
	// own, made from its options: Sentinel's dialer) get the release
	// messages from the master.
	{
		const name = "rxbt-sentinel-pubsub"
		pc := goredis.NewFailoverClient(&goredis.FailoverOptions{MasterName: master, SentinelAddrs: []string{saddr}, ClientName: name,
			DialTimeout: 5 * time.Second, ReadTimeout: 5 * time.Second, WriteTimeout: 5 * time.Second, MaxRetries: -1, DialerRetries: 1})
		checkReleaseWakesThroughPubSub(t, pc, name, primary.client(t))
		pc.Close()
	}

	counterSrv := sharedServer(t)
	prefix := prefixFor(t)
	cc := counterSrv.client(t)
	flushKeys(t, cc, prefix)
	const permits, procs = 3, 3
	// Each child goes on past its 7 s until it has seen 4 grants, a timeout
	// and a cancel (bounded): a loaded machine whose children time out on
	// their 30 ms waits no longer fails the grant count below.
	p := childParams{SentinelAddrs: []string{saddr}, MasterName: master, WaitReplicas: 1, CounterAddr: counterSrv.Addr(),
		Prefix: prefix, Name: "partner", Permits: permits, Duration: soak(7 * time.Second), Workers: 6,
		Counter: prefix + "holders", LeaseTTL: 10 * time.Second, Renew: time.Second, MinGrants: 4}
	var children []func() childResult
	for i := range procs {
		p.Seed = uint64(i + 1)
		_, sc := startChild(t, "hammer", p)
		children = append(children, func() childResult { return readResult(t, sc) })
	}

	// This process takes permits one after the other and records their
	// tokens, across the failover.
	fc := goredis.NewFailoverClient(&goredis.FailoverOptions{MasterName: master, SentinelAddrs: []string{saddr},
		DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second, ContextTimeoutEnabled: true, MaxRetries: -1, DialerRetries: 1})
	defer fc.Close()
	cfg := fastStore()
	cfg.KeyPrefix, cfg.WaitReplicas, cfg.LeaseTTL, cfg.RenewInterval = prefix, 1, 10*time.Second, time.Second
	s, err := rxredis.NewStore(fc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	b, err := rxredis.NewBulkhead(s, "partner", fleetConfig(permits, 200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	type grant struct {
		at    time.Time
		token int64
	}
	var (
		mu     sync.Mutex
		grants []grant
	)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			pm := b.Acquire()
			select {
			case <-pm.Acquisition().Done():
			case <-time.After(outcomeTimeout):
				return
			}
			if pm.Acquisition().Err() != nil {
				time.Sleep(5 * time.Millisecond)
				continue
			}
			l, _ := pm.Lease()
			mu.Lock()
			grants = append(grants, grant{time.Now(), l.Token})
			mu.Unlock()
			time.Sleep(time.Millisecond)
			pm.Finish()
		}
	}()

	time.Sleep(1500 * time.Millisecond)
	primary.Kill()
	killed := time.Now()
	sc := goredis.NewSentinelClient(&goredis.Options{Addr: saddr})
	defer sc.Close()
	eventually(t, outcomeTimeout, "sentinel promoted a replica", func() bool {
		a, err := sc.GetMasterAddrByName(context.Background(), master).Result()
		return err == nil && len(a) == 2 && a[1] != strconv.Itoa(primary.Port)
	})
	promoted := time.Since(killed)
	var total childResult
	for _, wait := range children {
		r := wait()
		total.Grants += r.Grants
		total.Timeouts += r.Timeouts
		total.Rejections += r.Rejections
		total.Violations += r.Violations
		total.MaxHolders = max(total.MaxHolders, r.MaxHolders)
	}
	close(stop)
	<-done
	for _, r := range []*server{r1, r2} {
		rc := goredis.NewClient(&goredis.Options{Addr: r.Addr()})
		info, _ := rc.Info(context.Background(), "replication").Result()
		rc.Close()
		var keep []string
		for _, l := range strings.Split(info, "\r\n") {
			if strings.HasPrefix(l, "role:") || strings.HasPrefix(l, "connected_slaves:") || strings.HasPrefix(l, "master_link_status:") || strings.HasPrefix(l, "master_port:") {
				keep = append(keep, l)
			}
		}
		t.Logf("after the failover, %s: %s", r.Addr(), strings.Join(keep, " "))
	}
	if log, err := os.ReadFile(slog); err == nil {
		for _, l := range strings.Split(string(log), "\n") {
			if strings.Contains(l, "switch-master") || strings.Contains(l, "odown") || strings.Contains(l, "slave-reconf") || strings.Contains(l, "failover-end") {
				t.Log("sentinel:", l)
			}
		}
	}

	mu.Lock()
	defer mu.Unlock()
	var before, after int
	var firstAfter time.Duration = -1
	for i, g := range grants {
		if i > 0 && g.token <= grants[i-1].token {
			t.Errorf("token %d after %d: fencing tokens went back across the failover", g.token, grants[i-1].token)
		}
		if g.at.Before(killed) {
			before++
		} else {
			after++
			if firstAfter < 0 {
				firstAfter = g.at.Sub(killed)
			}
		}
	}
	t.Logf("failover: replica promoted %v after the kill; first grant of this process %v after it; %d grants before, %d after, tokens strictly increasing",
		promoted, firstAfter, before, after)
	t.Logf("%d processes × %d workers on %d permits: %d grants, %d timeouts, %d rejections (Redis away), max %d holders",
		procs, p.Workers, permits, total.Grants, total.Timeouts, total.Rejections, total.MaxHolders)
	if before == 0 || after == 0 {
		t.Errorf("grants before the kill %d, after %d: want some of each", before, after)
	}
	if total.Violations != 0 || total.MaxHolders > permits {
		t.Errorf("%d times more than %d holders (max %d) across the failover", total.Violations, permits, total.MaxHolders)
	}
	if total.Grants < 10 {
		t.Errorf("only %d grants in the children", total.Grants)
	}
}
