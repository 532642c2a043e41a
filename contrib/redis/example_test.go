package redis_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/fileconfig"

	rxredis "github.com/rxbulkhead/bulkhead/contrib/redis"
)

// redisAddr is the address of the redis-server the tests started.
func redisAddr() string { return shared.Addr() }

// One limit for every replica: each process creates a Store over its
// go-redis client and a Bulkhead per partner, with the same name and limit.
func Example() {
	client := goredis.NewClient(&goredis.Options{Addr: redisAddr()})
	defer client.Close()
	store, err := rxredis.NewStore(client, rxredis.StoreConfig{KeyPrefix: "example:"})
	if err != nil {
		panic(err)
	}
	defer store.Close()

	walmart, err := rxredis.NewBulkhead(store, "walmart", rxredis.Config{
		Config: bulkhead.Config{MaxConcurrentCalls: 20, MaxWaitDuration: time.Second, MaxQueuedCalls: 100},
	})
	if err != nil {
		panic(err)
	}
	if err := walmart.Check(context.Background()); err != nil {
		panic(err) // wrong credentials, a key of another type, ...
	}

	a := walmart.AcquirePermissionAsync() // never blocks, no round trip here
	<-a.Done()
	if a.Err() != nil {
		fmt.Println("rejected:", a.Err())
		return
	}
	fmt.Println("permitted; this process holds", walmart.Metrics().InFlightCalls)
	walmart.FinishCall()
	// Output: permitted; this process holds 1
}

// Acquire returns the typed request: its Lease carries the fencing token
// to pass to a resource that refuses stale holders.
func ExampleBulkhead_Acquire() {
	client := goredis.NewClient(&goredis.Options{Addr: redisAddr()})
	defer client.Close()
	store, _ := rxredis.NewStore(client, rxredis.StoreConfig{KeyPrefix: "example-acquire:"})
	defer store.Close()
	b, _ := rxredis.NewBulkhead(store, "ledger", rxredis.Config{Config: bulkhead.Config{MaxConcurrentCalls: 1}})

	first := b.Acquire()
	<-first.Acquisition().Done()
	l1, _ := first.Lease()
	first.Finish()

	second := b.Acquire()
	<-second.Acquisition().Done()
	l2, _ := second.Lease()
	defer second.Finish()
	fmt.Println("tokens increase:", l2.Token > l1.Token)
	// Output: tokens increase: true
}

// A caller that only has the bulkhead.Bulkhead interface (an operator, a
// middleware) reads the lease of its acquisition with LeaseOf.
func ExampleLeaseOf() {
	client := goredis.NewClient(&goredis.Options{Addr: redisAddr()})
	defer client.Close()
	store, _ := rxredis.NewStore(client, rxredis.StoreConfig{KeyPrefix: "example-leaseof:"})
	defer store.Close()
	fleet, _ := rxredis.NewBulkhead(store, "acme", rxredis.Config{Config: bulkhead.Config{MaxConcurrentCalls: 5}})

	var bh bulkhead.Bulkhead = fleet
	a := bh.AcquirePermissionAsync()
	<-a.Done()
	if lease, ok := rxredis.LeaseOf(bh, a); ok {
		fmt.Println("lease of", lease.Bulkhead, "token > 0:", lease.Token > 0)
	}
	bh.FinishCall()
	// Output: lease of acme token > 0: true
}

// FleetMetrics counts the leases and tickets of every replica.
func ExampleBulkhead_FleetMetrics() {
	client := goredis.NewClient(&goredis.Options{Addr: redisAddr()})
	defer client.Close()
	store, _ := rxredis.NewStore(client, rxredis.StoreConfig{KeyPrefix: "example-metrics:"})
	defer store.Close()
	b, _ := rxredis.NewBulkhead(store, "acme", rxredis.Config{Config: bulkhead.Config{MaxConcurrentCalls: 5}})

	a := b.AcquirePermissionAsync()
	<-a.Done()
	m, err := b.FleetMetrics(context.Background())
	if err != nil {
		panic(err)
	}
	fmt.Printf("fleet: %d of %d in flight, %d queued\n", m.InFlightCalls, m.MaxConcurrentCalls, m.QueuedCalls)
	b.FinishCall()
	// Output: fleet: 1 of 5 in flight, 0 queued
}

// With FailOver, a replica that cannot reach Redis admits calls through a
// local semaphore of LocalFraction of the limit: with 4 replicas, 1/4.
// With FailClosed (the zero value) it rejects them with ErrUnavailable.
func ExampleConfig_failOver() {
	client := goredis.NewClient(&goredis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialerRetries: 1}) // nothing listens there
	defer client.Close()
	store, _ := rxredis.NewStore(client, rxredis.StoreConfig{KeyPrefix: "example-failover:", Timeout: 200 * time.Millisecond})
	defer store.Close()

	closed, _ := rxredis.NewBulkhead(store, "closed", rxredis.Config{Config: bulkhead.Config{MaxConcurrentCalls: 20}})
	a := closed.AcquirePermissionAsync()
	<-a.Done()
	fmt.Println("fail-closed, unavailable:", errors.Is(a.Err(), rxredis.ErrUnavailable))

	open, _ := rxredis.NewBulkhead(store, "open", rxredis.Config{
		Config:      bulkhead.Config{MaxConcurrentCalls: 20},
		Unreachable: rxredis.FailOver, LocalFraction: 0.25,
	})
	b := open.AcquirePermissionAsync()
	<-b.Done()
	fmt.Println("fail-over, granted locally:", b.Err() == nil)
	open.FinishCall()
	// Output:
	// fail-closed, unavailable: true
	// fail-over, granted locally: true
}

// A Registry keeps one fleet bulkhead per partner, from named configs.
func ExampleNewRegistry() {
	client := goredis.NewClient(&goredis.Options{Addr: redisAddr()})
	defer client.Close()
	store, _ := rxredis.NewStore(client, rxredis.StoreConfig{KeyPrefix: "example-registry:"})
	defer store.Close()

	reg, err := rxredis.NewRegistry(store,
		rxredis.Config{Config: bulkhead.Config{MaxConcurrentCalls: 10}},
		rxredis.WithConfig("walmart", rxredis.Config{Config: bulkhead.Config{MaxConcurrentCalls: 20, MaxWaitDuration: time.Second, MaxQueuedCalls: 100}}),
	)
	if err != nil {
		panic(err)
	}
	acme, _ := reg.Get("acme")
	walmart, _ := reg.GetWithConfig("walmart", "walmart")
	fmt.Println(acme.Name(), acme.Config().MaxConcurrentCalls)
	fmt.Println(walmart.Name(), walmart.Config().MaxConcurrentCalls)
	// Output:
	// acme 10
	// walmart 20
}

// The same configuration file format as fileconfig, with store: redis.
func ExampleNewRegistryFromFile() {
	client := goredis.NewClient(&goredis.Options{Addr: redisAddr()})
	defer client.Close()
	store, _ := rxredis.NewStore(client, rxredis.StoreConfig{KeyPrefix: "example-file:"})
	defer store.Close()

	var file fileconfig.File
	err := json.Unmarshal([]byte(`{
	  "configs": {
	    "default": {"maxConcurrentCalls": 20, "maxWaitDuration": "50ms", "maxQueuedCalls": 100, "store": "redis"}
	  },
	  "instances": {
	    "walmart": {"store": {"type": "redis", "unreachable": "fail-over", "localFraction": 0.25}}
	  }
	}`), &file)
	if err != nil {
		panic(err)
	}
	reg, err := rxredis.NewRegistryFromFile(store, file)
	if err != nil {
		panic(err)
	}
	walmart, _ := reg.Find("walmart")
	fmt.Println(walmart.Name(), walmart.Config().MaxConcurrentCalls, walmart.Config().Unreachable)
	// Output: walmart 20 fail-over
}

// A Store with its knobs: a crashed holder's permits come back within
// LeaseTTL + RenewInterval; waiters ask again every PollInterval if no
// release message arrives; a round trip slower than Timeout counts as
// Redis being unreachable.
func ExampleNewStore() {
	client := goredis.NewClient(&goredis.Options{Addr: redisAddr(), DialerRetries: 1, MaxRetries: -1})
	defer client.Close()
	store, err := rxredis.NewStore(client, rxredis.StoreConfig{
		KeyPrefix:     "example-store:",
		LeaseTTL:      5 * time.Second,
		RenewInterval: time.Second,
		PollInterval:  100 * time.Millisecond,
		Timeout:       500 * time.Millisecond,
	})
	if err != nil {
		panic(err)
	}
	fmt.Println("available:", store.Available())
	fmt.Println("close:", store.Close()) // stops its goroutines; the client stays open
	// Output:
	// available: true
	// close: <nil>
}

// Events are the core's, published in this process.
func ExampleBulkhead_OnEvent() {
	client := goredis.NewClient(&goredis.Options{Addr: redisAddr()})
	defer client.Close()
	store, _ := rxredis.NewStore(client, rxredis.StoreConfig{KeyPrefix: "example-events:"})
	defer store.Close()
	b, _ := rxredis.NewBulkhead(store, "acme", rxredis.Config{Config: bulkhead.Config{MaxConcurrentCalls: 1}})

	events := make(chan bulkhead.EventType, 4)
	b.OnEvent(func(e bulkhead.Event) { events <- e.Type })
	a := b.AcquirePermissionAsync()
	<-a.Done()
	full := b.AcquirePermissionAsync() // MaxWaitDuration 0: no wait
	<-full.Done()
	b.FinishCall()
	for range 3 {
		fmt.Println(<-events)
	}
	// Output:
	// permitted
	// rejected
	// finished
}

// The Store reports its state changes (down, refused, up) as events, and
// Logger hands go-redis's own messages about the Store's round trips (a
// failed dial on every probe while Redis is away) to the same listeners.
// A client with ContextTimeoutEnabled lets go-redis itself give up on a
// round trip the Store abandoned after Timeout.
func ExampleStore_OnEvent() {
	goredis.SetLogger(rxredis.Logger(quietLogger{})) // once per process; nil: the log package
	defer goredis.SetLogger(quietLogger{})
	client := goredis.NewClient(&goredis.Options{Addr: "127.0.0.1:1", // nothing listens there
		MaxRetries: -1, DialerRetries: 1, ContextTimeoutEnabled: true})
	defer client.Close()
	store, _ := rxredis.NewStore(client, rxredis.StoreConfig{KeyPrefix: "example-events:", Timeout: 200 * time.Millisecond})
	down := make(chan error, 1)
	store.OnEvent(func(e rxredis.StoreEvent) {
		switch e.Type {
		case rxredis.StoreDown, rxredis.StoreRefused:
			select {
			case down <- e.Err:
			default:
			}
		case rxredis.ClientLog:
			// go-redis's message, e.Message: log it at debug level, count it...
		}
	})
	defer store.Close()
	partner, _ := rxredis.NewBulkhead(store, "partner", rxredis.Config{Config: bulkhead.Config{MaxConcurrentCalls: 5}})
	a := partner.AcquirePermissionAsync()
	<-a.Done()
	fmt.Println("unavailable:", errors.Is(a.Err(), rxredis.ErrUnavailable), "refused:", errors.Is(a.Err(), rxredis.ErrRefused))
	fmt.Println("store event:", <-down != nil)
	// Output:
	// unavailable: true refused: false
	// store event: true
}

// One ChangeConfig stores the fleet limit in Redis for every replica.
func ExampleBulkhead_ChangeConfig() {
	client := goredis.NewClient(&goredis.Options{Addr: redisAddr()})
	defer client.Close()
	store, _ := rxredis.NewStore(client, rxredis.StoreConfig{KeyPrefix: "example-change:"})
	defer store.Close()
	acme, _ := rxredis.NewBulkhead(store, "acme", rxredis.Config{Config: bulkhead.Config{MaxConcurrentCalls: 5}})

	cfg := acme.Config()
	cfg.MaxConcurrentCalls = 8 // for every replica of "acme"
	if err := acme.ChangeConfig(context.Background(), cfg); err != nil {
		panic(err)
	}
	m, _ := acme.FleetMetrics(context.Background())
	fmt.Println("fleet limit:", m.MaxConcurrentCalls)
	// Output: fleet limit: 8
}

// Keys you do not control (tenants, client ids): the keyed path holds the
// key's bulkhead from the call to Finish, so the registry can evict idle
// bulkheads (their keys in Redis expire by themselves) and send the keys
// beyond its cap to one shared catch-all, never letting a key run two
// bulkheads at once.
func ExampleRegistry_Acquire() {
	client := goredis.NewClient(&goredis.Options{Addr: redisAddr()})
	defer client.Close()
	store, _ := rxredis.NewStore(client, rxredis.StoreConfig{KeyPrefix: "example-keyed:"})
	defer store.Close()

	perTenant := rxredis.Config{Config: bulkhead.Config{MaxConcurrentCalls: 5}}
	reg, err := rxredis.NewRegistry(store, perTenant,
		rxredis.WithIdleTimeout(10*time.Minute),
		rxredis.WithMaxBulkheads(1000, rxredis.Config{Config: bulkhead.Config{MaxConcurrentCalls: 50}}),
	)
	if err != nil {
		panic(err)
	}

	p := reg.Acquire("tenant-42", bulkhead.CallOptions{}) // never blocks
	<-p.Acquisition().Done()
	if err := p.Acquisition().Err(); err != nil {
		fmt.Println("rejected:", err)
		return
	}
	fmt.Println("permitted by", p.Name())
	p.Finish() // gives the permit back and lets the registry evict the bulkhead once idle
	st := reg.Stats()
	fmt.Println("bulkheads:", st.Bulkheads, "evictions:", st.Evictions, "catch-all calls:", st.CatchAllCalls)
	// Output:
	// permitted by tenant-42
	// bulkheads: 2 evictions: 0 catch-all calls: 0
}

// A key taken from user data can be of any length. With the cap of
// WithMaxBulkheads, a key longer than WithMaxKeyLength (256 bytes by
// default) that has no bulkhead is admitted by the catch-all, so it names
// no bulkhead, and no key in Redis, of its length.
func ExampleWithMaxKeyLength() {
	client := goredis.NewClient(&goredis.Options{Addr: redisAddr()})
	defer client.Close()
	store, _ := rxredis.NewStore(client, rxredis.StoreConfig{KeyPrefix: "example-keylen:"})
	defer store.Close()

	perClient := rxredis.Config{Config: bulkhead.Config{MaxConcurrentCalls: 5}}
	reg, err := rxredis.NewRegistry(store, perClient,
		rxredis.WithMaxBulkheads(1000, rxredis.Config{Config: bulkhead.Config{MaxConcurrentCalls: 50}}),
		rxredis.WithMaxKeyLength(64),
	)
	if err != nil {
		panic(err)
	}
	for _, key := range []string{"client-7", strings.Repeat("x", 100_000)} {
		p := reg.Acquire(key, bulkhead.CallOptions{})
		<-p.Acquisition().Done()
		if err := p.Acquisition().Err(); err != nil {
			fmt.Println("rejected:", err)
			return
		}
		fmt.Printf("a key of %d bytes: permitted by %s\n", len(key), p.Name())
		p.Finish()
	}
	// Output:
	// a key of 8 bytes: permitted by client-7
	// a key of 100000 bytes: permitted by catch-all
}
