package redis_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/testkit"

	rxredis "github.com/rxbulkhead/bulkhead/contrib/redis"
)

func TestRegistryCreatesOneBulkheadPerNameFromNamedConfigs(t *testing.T) {
	s, _ := newStore(t, sharedServer(t), fastStore())
	reg, err := rxredis.NewRegistry(s, fleetConfig(20, 0), rxredis.WithConfig("walmart", fleetConfig(5, time.Second)))
	if err != nil {
		t.Fatal(err)
	}
	log := &eventTypes{}
	reg.OnEvent(log.add)
	a, err := reg.Get("acme")
	if err != nil {
		t.Fatal(err)
	}
	w, err := reg.GetWithConfig("walmart", "walmart")
	if err != nil {
		t.Fatal(err)
	}
	testkit.CheckPermits(t, reg.All()...)
	if again, _ := reg.GetWithConfig("walmart", bulkhead.DefaultConfigName); again != w {
		t.Error("a second Get made a second bulkhead")
	}
	if a.Config().MaxConcurrentCalls != 20 || w.Config().MaxConcurrentCalls != 5 {
		t.Errorf("limits %d and %d, want 20 and 5", a.Config().MaxConcurrentCalls, w.Config().MaxConcurrentCalls)
	}
	if f, ok := reg.Find("acme"); !ok || f != a {
		t.Error("Find did not return the bulkhead")
	}
	if err := await(t, w.AcquirePermissionAsync()); err != nil {
		t.Fatal(err)
	}
	w.FinishCall()
	if seen := log.get(); len(seen) != 2 || seen[0] != bulkhead.CallPermitted || seen[1] != bulkhead.CallFinished {
		t.Errorf("registry listener saw %v", seen)
	}
	if _, err := reg.GetWithConfig("x", "nope"); err == nil || !strings.Contains(err.Error(), `unknown config "nope"`) {
		t.Errorf("unknown config: %v", err)
	}
	if _, err := rxredis.NewRegistry(s, fleetConfig(0, 0)); err == nil || !strings.Contains(err.Error(), `"default"`) {
		t.Errorf("invalid defaults: %v", err)
	}
}

type eventTypes struct {
	mu sync.Mutex
	ts []bulkhead.EventType
}

func (l *eventTypes) add(e bulkhead.Event) { l.mu.Lock(); l.ts = append(l.ts, e.Type); l.mu.Unlock() }

func (l *eventTypes) get() []bulkhead.EventType {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]bulkhead.EventType(nil), l.ts...)
}
