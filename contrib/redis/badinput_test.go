package redis_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/rxbulkhead/bulkhead"

	rxredis "github.com/rxbulkhead/bulkhead/contrib/redis"
)

func TestInvalidConfigsAreRefusedNamingTheField(t *testing.T) {
	s, _ := newStore(t, sharedServer(t), fastStore())
	ok := fleetConfig(2, time.Second)
	with := func(f func(*rxredis.Config)) rxredis.Config { c := ok; f(&c); return c }
	for _, tc := range []struct {
		name, bulkhead string
		cfg            rxredis.Config
		want           string
	}{
		{"no permits", "p", with(func(c *rxredis.Config) { c.MaxConcurrentCalls = 0 }), "MaxConcurrentCalls must be >= 1"},
		{"negative wait", "p", with(func(c *rxredis.Config) { c.MaxWaitDuration = -1 }), "MaxWaitDuration must be >= 0"},
		{"LIFO", "p", with(func(c *rxredis.Config) { c.QueueOrder = bulkhead.LIFO }), "QueueOrder must be FIFO"},
		// It was accepted and ignored: a limit tried "in shadow mode" was enforced.
		{"shadow mode", "p", with(func(c *rxredis.Config) { c.ShadowMode = true }), "ShadowMode is not supported by a fleet bulkhead"},
		{"unknown policy", "p", with(func(c *rxredis.Config) { c.Unreachable = 7 }), "Unreachable must be FailClosed or FailOver"},
		{"fail-over without a fraction", "p", with(func(c *rxredis.Config) { c.Unreachable = rxredis.FailOver }), "LocalFraction must be in (0, 1]"},
		{"fraction above 1", "p", with(func(c *rxredis.Config) { c.Unreachable, c.LocalFraction = rxredis.FailOver, 1.5 }), "LocalFraction must be in (0, 1]"},
		{"fraction with fail-closed", "p", with(func(c *rxredis.Config) { c.LocalFraction = 0.5 }), "LocalFraction must be 0 with FailClosed"},
		{"empty name", "", ok, "name must not be empty"},
		{"brace in name", "a{b}", ok, "must not contain '{' or '}'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := rxredis.NewBulkhead(s, tc.bulkhead, tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one saying %q", err, tc.want)
			}
			var ce *bulkhead.ConfigError
			if errors.As(err, &ce) && (ce.Name != tc.bulkhead || !errors.Is(err, bulkhead.ErrInvalidConfig)) {
				t.Errorf("ConfigError names %q, want %q", ce.Name, tc.bulkhead)
			}
		})
	}
	if _, err := rxredis.NewBulkhead(s, "dup", ok); err != nil {
		t.Fatal(err)
	}
	if _, err := rxredis.NewBulkhead(s, "dup", ok); err == nil || !strings.Contains(err.Error(), "already has a bulkhead") {
		t.Errorf("second bulkhead of one name: %v", err)
	}
	if _, err := rxredis.NewBulkhead(nil, "p", ok); err == nil || !strings.Contains(err.Error(), "store must not be nil") {
		t.Errorf("nil store: %v", err)
	}
}

func TestInvalidStoreConfigsAreRefusedNamingTheField(t *testing.T) {
	c := goredis.NewClient(&goredis.Options{Addr: "127.0.0.1:1"})
	defer c.Close()
	for _, tc := range []struct {
		cfg  rxredis.StoreConfig
		want string
	}{
		{rxredis.StoreConfig{LeaseTTL: 50 * time.Millisecond}, "LeaseTTL must be >= 100ms"},
		{rxredis.StoreConfig{LeaseTTL: time.Second, RenewInterval: 600 * time.Millisecond}, "RenewInterval must be > 0 and < LeaseTTL/2"},
		{rxredis.StoreConfig{KeyPrefix: "a{"}, "KeyPrefix must not contain"},
		{rxredis.StoreConfig{Timeout: -time.Second}, "Timeout must be > 0"},
	} {
		if s, err := rxredis.NewStore(c, tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			if s != nil {
				s.Close()
			}
			t.Errorf("NewStore(%+v) = %v, want an error saying %q", tc.cfg, err, tc.want)
		}
	}
	if _, err := rxredis.NewStore(nil, rxredis.StoreConfig{}); err == nil || !strings.Contains(err.Error(), "client must not be nil") {
		t.Errorf("nil client: %v", err)
	}
	// A Ring's shards do not share pub/sub (and go-redis's Ring.PSubscribe
	// panics without a channel): an error, not a panic.
	ring := goredis.NewRing(&goredis.RingOptions{Addrs: map[string]string{"a": "127.0.0.1:1"}})
	defer ring.Close()
	if s, err := rxredis.NewStore(ring, rxredis.StoreConfig{}); err == nil || !strings.Contains(err.Error(), "*redis.Ring is not supported") {
		if s != nil {
			s.Close()
		}
		t.Errorf("NewStore(a *goredis.Ring) = %v, want an error saying a Ring is not supported", err)
	}
}

func TestWrongCredentialsGiveAnErrorThatSaysSoAndIsNotUnavailable(t *testing.T) {
	srv := withServer(t, "--requirepass", "s3cret")
	for _, tc := range []struct {
		name     string
		password string
		want     string
	}{
		{"wrong password", "nope", "WRONGPASS"},
		{"no password", "", "NOAUTH"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := srv.client(t, func(o *goredis.Options) { o.Password = tc.password })
			s, err := rxredis.NewStore(c, fastStore())
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			b, err := rxredis.NewBulkhead(s, "p", fleetConfig(1, time.Second))
			if err != nil {
				t.Fatal(err)
			}
			err = b.Check(context.Background())
			var se *rxredis.StoreError
			if !errors.As(err, &se) || se.Unreachable || errors.Is(err, rxredis.ErrUnavailable) ||
				!strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "Password") {
				t.Fatalf("Check = %v, want a refusal naming %s and pointing at the password", err, tc.want)
			}
			// Without a password Redis cuts long unauthenticated commands
			// short ("Protocol error: unauthenticated multibulk"): the
			// hint still points at the password.
			if err := await(t, b.AcquirePermissionAsync()); err == nil || errors.Is(err, rxredis.ErrUnavailable) ||
				!strings.Contains(err.Error(), "Password") {
				t.Errorf("acquisition = %v, want a refusal pointing at the password", err)
			}
		})
	}
	c := srv.client(t, func(o *goredis.Options) { o.Password = "s3cret" })
	s, err := rxredis.NewStore(c, fastStore())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	b, _ := rxredis.NewBulkhead(s, "p", fleetConfig(1, time.Second))
	if err := b.Check(context.Background()); err != nil {
		t.Fatalf("right password: %v", err)
	}
	if err := await(t, b.AcquirePermissionAsync()); err != nil {
		t.Fatalf("right password: %v", err)
	}
	b.FinishCall()
}

func TestAKeyHoldingAnotherTypeGivesAnErrorNamingTheKey(t *testing.T) {
	srv := sharedServer(t)
	for _, tc := range []struct {
		suffix, want string
		set          func(c *goredis.Client, key string) error
	}{
		{"leases", "holds a string, not a zset", func(c *goredis.Client, k string) error { return c.Set(context.Background(), k, "x", 0).Err() }},
		{"queue", "holds a list, not a zset", func(c *goredis.Client, k string) error { return c.RPush(context.Background(), k, "x").Err() }},
		{"alive", "holds a hash, not a zset", func(c *goredis.Client, k string) error { return c.HSet(context.Background(), k, "x", "y").Err() }},
		{"seq", "holds a hash, not a counter", func(c *goredis.Client, k string) error { return c.HSet(context.Background(), k, "x", "y").Err() }},
	} {
		t.Run(tc.suffix, func(t *testing.T) {
			s, c := newStore(t, srv, fastStore())
			key := prefixFor(t) + "{p}:" + tc.suffix
			if err := tc.set(c, key); err != nil {
				t.Fatal(err)
			}
			b := newBulkhead(t, s, "p", fleetConfig(1, time.Second))
			want := "key " + key + " " + tc.want
			if err := b.Check(context.Background()); err == nil || !strings.Contains(err.Error(), want) || errors.Is(err, rxredis.ErrUnavailable) {
				t.Fatalf("Check = %v, want an error saying %q", err, want)
			}
			if tc.suffix == "alive" {
				// alive is used only by calls that queue: one must.
				held := b.Acquire()
				if err := await(t, held.Acquisition()); err != nil {
					t.Fatal(err)
				}
				defer held.Finish()
				// Mended before the release and Close's give-back, which
				// the hash fails too (Close would report it).
				defer c.Del(context.Background(), key)
			}
			err := await(t, b.AcquirePermissionAsync())
			if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "KeyPrefix") {
				t.Fatalf("acquisition = %v, want an error saying %q and what to do", err, want)
			}
			if errors.Is(err, bulkhead.ErrBulkheadFull) {
				t.Error("a refused request must not look like a full bulkhead")
			}
		})
	}
}
