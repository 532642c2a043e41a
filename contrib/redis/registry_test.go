package redis_test

import (
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/fileconfig"
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

func TestNewRegistryFromFileCreatesFleetBulkheadsFromTheCoreFormat(t *testing.T) {
	s, _ := newStore(t, sharedServer(t), fastStore())
	var f fileconfig.File
	err := json.Unmarshal([]byte(`{
	  "configs": {"default": {"maxConcurrentCalls": 20, "store": "redis"},
	              "edi": {"maxConcurrentCalls": 5, "maxWaitDuration": "1s", "maxQueuedCalls": 50,
	                      "store": {"type": "redis", "unreachable": "fail-over", "localFraction": 0.2}}},
	  "instances": {"walmart": {"baseConfig": "edi"}, "acme": {}}
	}`), &f)
	if err != nil {
		t.Fatal(err)
	}
	reg, err := rxredis.NewRegistryFromFile(s, f)
	if err != nil {
		t.Fatal(err)
	}
	testkit.CheckPermits(t, reg.All()...)
	w, ok := reg.Find("walmart")
	if !ok {
		t.Fatal("instance walmart not created")
	}
	if c := w.Config(); c.MaxConcurrentCalls != 5 || c.Unreachable != rxredis.FailOver || c.LocalFraction != 0.2 || c.MaxQueuedCalls != 50 {
		t.Errorf("walmart config %+v", c)
	}
	if a, _ := reg.Find("acme"); a == nil || a.Config().Unreachable != rxredis.FailClosed || a.Config().MaxConcurrentCalls != 20 {
		t.Errorf("acme not created from default")
	}
	if later, _ := reg.Get("later"); later.Config().MaxConcurrentCalls != 20 {
		t.Errorf("a bulkhead created later does not use the file's default")
	}

	var local fileconfig.File
	if err := json.Unmarshal([]byte(`{"instances": {"lab": {"maxConcurrentCalls": 2}}}`), &local); err != nil {
		t.Fatal(err)
	}
	if _, err := rxredis.NewRegistryFromFile(s, local); err == nil || !strings.Contains(err.Error(), `instance "lab": store is local`) {
		t.Errorf("a local entry: %v", err)
	}
	var budgeted fileconfig.File
	if err := json.Unmarshal([]byte(`{
	  "budgets": {"hub": {"size": 10, "classes": [{"name": "only"}]}},
	  "budget": "hub",
	  "configs": {"default": {"maxConcurrentCalls": 2, "store": "redis"}}
	}`), &budgeted); err != nil {
		t.Fatal(err)
	}
	var fe *fileconfig.Error
	if _, err := rxredis.NewRegistryFromFile(s, budgeted); !errors.As(err, &fe) || fe.Key != "budget" || !strings.Contains(err.Error(), "joins no budget") {
		t.Errorf("a file whose registry joins a budget: %v, want an error naming the budget key", err)
	}
}
