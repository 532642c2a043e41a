package fileconfig_test

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/fileconfig"
	"github.com/rxbulkhead/bulkhead/testkit"
)

func TestNewRegistryCreatesInstances(t *testing.T) {
	r, err := fileconfig.NewRegistry(decodeJSON(t, issueConfigJSON))
	if err != nil {
		t.Fatal(err)
	}
	testkit.CheckRegistry(t, r)
	var names []string
	for _, s := range r.All() {
		names = append(names, s.Name())
	}
	if want := []string{"carrefour", "walmart"}; !reflect.DeepEqual(names, want) {
		t.Fatalf("bulkheads %v, want %v", names, want)
	}
	w, _ := r.Find("walmart")
	if got := w.Metrics(); got.MaxAllowedConcurrentCalls != 60 || got.MaxQueuedCalls != 100 || got.AvailableConcurrentCalls != 60 {
		t.Errorf("walmart metrics %+v, want 60 permits free and a 100-call queue", got)
	}
	// Later bulkheads use the file's "default"; named configs are known.
	other, err := r.Get("auchan")
	if err != nil || other.Config().MaxConcurrentCalls != 20 {
		t.Errorf("Get(auchan) = %v, %v; want the file's default (20 calls)", other.Config(), err)
	}
	big, err := r.GetWithConfig("lidl", "big")
	if err != nil || big.Config().MaxConcurrentCalls != 60 {
		t.Errorf("GetWithConfig(lidl, big) = %v, %v; want 60 calls", big.Config(), err)
	}
}

func TestNewRegistryFailsOnInvalidFile(t *testing.T) {
	f := fileconfig.File{Instances: map[string]fileconfig.Spec{"walmart": {MaxConcurrentCalls: new(0)}}}
	r, err := fileconfig.NewRegistry(f)
	if r != nil || !errors.Is(err, bulkhead.ErrInvalidConfig) {
		t.Fatalf("NewRegistry = %v, %v; want nil and an invalid-config error", r, err)
	}
}

func TestApplyChangesLiveBulkheadsAndGrantsWaiters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, err := fileconfig.NewRegistry(decodeJSON(t, `{"instances": {"walmart": {"maxConcurrentCalls": 1, "maxWaitDuration": "1h"}}}`))
		if err != nil {
			t.Fatal(err)
		}
		testkit.CheckRegistry(t, r)
		w, _ := r.Find("walmart")
		if !w.TryAcquirePermission() {
			t.Fatal("first permit refused")
		}
		waiter := w.AcquirePermissionAsync()
		if err := waiter.Err(); !errors.Is(err, bulkhead.ErrPending) {
			t.Fatalf("waiter = %v, want pending", err)
		}

		if err := fileconfig.Apply(r, decodeJSON(t, `{"instances": {"walmart": {"maxConcurrentCalls": 2, "maxWaitDuration": "1h"}, "lidl": {"maxQueuedCalls": 4}}}`)); err != nil {
			t.Fatal(err)
		}
		if err := waiter.Err(); err != nil {
			t.Fatalf("after growing to 2 permits the waiter is %v, want granted", err)
		}
		if got := w.Config().MaxConcurrentCalls; got != 2 {
			t.Errorf("walmart has %d permits after Apply, want 2", got)
		}
		lidl, ok := r.Find("lidl")
		if !ok || lidl.Config().MaxQueuedCalls != 4 {
			t.Errorf("Apply did not create lidl with its config")
		}
		w.FinishCall()
		w.FinishCall()
	})
}

func TestApplyWithInvalidFileChangesNothing(t *testing.T) {
	r, err := fileconfig.NewRegistry(decodeJSON(t, issueConfigJSON))
	if err != nil {
		t.Fatal(err)
	}
	bad := fileconfig.File{
		Configs: map[string]fileconfig.Spec{"default": {MaxConcurrentCalls: new(5)}},
		Instances: map[string]fileconfig.Spec{
			"walmart": {MaxConcurrentCalls: new(1)}, "carrefour": {MaxQueuedCalls: new(-1)}, "new": {},
		},
	}
	err = fileconfig.Apply(r, bad)
	if !errors.Is(err, bulkhead.ErrInvalidConfig) || !strings.Contains(err.Error(), `bulkhead "carrefour": maxQueuedCalls -1`) {
		t.Fatalf("Apply = %v, want the carrefour error", err)
	}
	if w, _ := r.Find("walmart"); w.Config().MaxConcurrentCalls != 60 {
		t.Errorf("walmart changed to %v", w.Config())
	}
	if _, ok := r.Find("new"); ok {
		t.Error("a failed Apply created a bulkhead")
	}
	if s, _ := r.Get("later"); s.Config().MaxConcurrentCalls != 20 {
		t.Errorf("a failed Apply changed the default config: %v", s.Config())
	}
}

func TestApplyKeepsUnlistedBulkheadsAndUpdatesDefault(t *testing.T) {
	r, err := fileconfig.NewRegistry(decodeJSON(t, issueConfigJSON))
	if err != nil {
		t.Fatal(err)
	}
	adhoc, _ := r.Get("adhoc")
	if err := fileconfig.Apply(r, decodeJSON(t, `{"configs": {"default": {"maxConcurrentCalls": 7}}}`)); err != nil {
		t.Fatal(err)
	}
	if adhoc.Config().MaxConcurrentCalls != 20 {
		t.Errorf("an unlisted bulkhead changed: %v", adhoc.Config())
	}
	if len(r.All()) != 3 {
		t.Errorf("Apply removed bulkheads: %d left", len(r.All()))
	}
	if s, _ := r.Get("later"); s.Config().MaxConcurrentCalls != 7 {
		t.Errorf("a bulkhead created after Apply has %v, want the new default", s.Config())
	}
}

func TestApplyPanicsOnANilRegistry(t *testing.T) {
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "nil *bulkhead.Registry") {
			t.Fatalf("recovered %v, want a panic naming the nil registry", r)
		}
	}()
	_ = fileconfig.Apply(nil, fileconfig.File{})
}

// TestApplyCreatesInstancesWithTheirConfigAtOnce races a reader with reloads
// that each create an instance whose config is not the default: whenever the
// reader finds the new instance, it must already have its own config.
func TestApplyCreatesInstancesWithTheirConfigAtOnce(t *testing.T) {
	r, err := fileconfig.NewRegistry(decodeJSON(t, `{"configs": {"default": {"maxConcurrentCalls": 1}}}`))
	if err != nil {
		t.Fatal(err)
	}
	testkit.CheckRegistry(t, r)
	const reloads = 300
	var next atomic.Int64 // index of the instance the next reload creates
	done := make(chan struct{})
	var reader sync.WaitGroup
	reader.Go(func() {
		for {
			select {
			case <-done:
				return
			default:
			}
			name := fmt.Sprintf("n-%d", next.Load())
			if s, ok := r.Find(name); ok {
				if got := s.Config().MaxConcurrentCalls; got != 7 {
					t.Errorf("%s seen with %d permits, want its own 7", name, got)
					return
				}
			}
		}
	})
	for i := range reloads {
		f := decodeJSON(t, fmt.Sprintf(`{"configs": {"default": {"maxConcurrentCalls": 1}}, "instances": {"n-%d": {"maxConcurrentCalls": 7}}}`, i))
		if err := fileconfig.Apply(r, f); err != nil {
			t.Fatal(err)
		}
		next.Add(1)
	}
	close(done)
	reader.Wait()
}

// TestApplyUnderTrafficLeaksNoPermit reloads two alternating files while
// goroutines take and return permits: ChangeConfig must never lose or
// duplicate a permit, whatever it races with.
func TestApplyUnderTrafficLeaksNoPermit(t *testing.T) {
	files := []fileconfig.File{
		decodeJSON(t, `{"instances": {"p": {"maxConcurrentCalls": 1}, "q": {"maxConcurrentCalls": 5}}}`),
		decodeJSON(t, `{"instances": {"p": {"maxConcurrentCalls": 4}, "q": {"maxConcurrentCalls": 2}}}`),
	}
	r, err := fileconfig.NewRegistry(files[0])
	if err != nil {
		t.Fatal(err)
	}
	testkit.CheckRegistry(t, r)
	var wg sync.WaitGroup
	for g := range 4 {
		name := []string{"p", "q"}[g%2]
		s, _ := r.Find(name)
		wg.Go(func() {
			for range 3000 {
				if s.TryAcquirePermission() {
					if m := s.Metrics(); m.InFlightCalls > 5 {
						t.Errorf("%s: %d permits held, more than any config allows", name, m.InFlightCalls)
					}
					s.FinishCall()
				}
			}
		})
	}
	workersDone := make(chan struct{})
	go func() { wg.Wait(); close(workersDone) }()
	// Reload until the workers are done, so every worker iteration races
	// with reloads.
	for i := 0; ; i++ {
		select {
		case <-workersDone:
			return
		default:
		}
		if err := fileconfig.Apply(r, files[i%2]); err != nil {
			t.Fatal(err)
		}
	}
}

// codeRegistry is a registry built in code, not from a file: default
// {7 permits, 1 s wait, queue 10} and a config "batch".
func codeRegistry(t *testing.T) (*bulkhead.Registry, bulkhead.Config, bulkhead.Config) {
	t.Helper()
	def := bulkhead.Config{MaxConcurrentCalls: 7, MaxWaitDuration: time.Second, MaxQueuedCalls: 10}
	batch := bulkhead.Config{MaxConcurrentCalls: 2, MaxQueuedCalls: bulkhead.Unbounded, MaxWaitDuration: bulkhead.NoTimeout}
	r, err := bulkhead.NewRegistry(def, bulkhead.WithConfig("batch", batch))
	if err != nil {
		t.Fatal(err)
	}
	return r, def, batch
}

func TestApplyOfAFileWithoutDefaultKeepsTheRegistrysDefault(t *testing.T) {
	for name, doc := range map[string]string{
		"instances only":           `{"instances": {"walmart": {"maxConcurrentCalls": 3}}}`,
		"configs without default":  `{"configs": {"big": {"maxConcurrentCalls": 60}}, "instances": {"walmart": {"baseConfig": "big"}}}`,
		"an empty configs section": `{"configs": {}, "instances": {"walmart": {}}}`,
		"a null configs section":   `{"configs": null}`,
		"an empty file":            `{}`,
	} {
		t.Run(name, func(t *testing.T) {
			r, def, batch := codeRegistry(t)
			before, _ := r.Get("before")
			if err := fileconfig.Apply(r, decodeJSON(t, doc)); err != nil {
				t.Fatal(err)
			}
			if s, _ := r.Get("later"); s.Config() != def {
				t.Errorf("a partner created after Apply has %v, want the registry's default %v", s.Config(), def)
			}
			if s, _ := r.GetWithConfig("later-batch", "batch"); s.Config() != batch {
				t.Errorf("a config the file does not name changed: %v, want %v", s.Config(), batch)
			}
			if before.Config() != def {
				t.Errorf("a bulkhead the file does not list changed: %v", before.Config())
			}
		})
	}
}

func TestApplyOfAFileWithDefaultReplacesTheRegistrysDefault(t *testing.T) {
	r, _, _ := codeRegistry(t)
	if err := fileconfig.Apply(r, decodeJSON(t, `{"configs": {"default": {"maxConcurrentCalls": 4}}}`)); err != nil {
		t.Fatal(err)
	}
	want := bulkhead.DefaultConfig()
	want.MaxConcurrentCalls = 4
	if s, _ := r.Get("later"); s.Config() != want {
		t.Errorf("a partner created after Apply has %v, want the file's default %v", s.Config(), want)
	}
}

func TestApplyOfAFileWithoutDefaultResolvesItsEntriesFromTheBuiltinDefaults(t *testing.T) {
	// Resolve's rule, documented at Apply: an entry without a base in a file
	// without "default" starts from bulkhead.DefaultConfig().
	r, _, _ := codeRegistry(t)
	if err := fileconfig.Apply(r, decodeJSON(t, `{"instances": {"walmart": {"maxConcurrentCalls": 3}}}`)); err != nil {
		t.Fatal(err)
	}
	want := bulkhead.DefaultConfig()
	want.MaxConcurrentCalls = 3
	if s, _ := r.Find("walmart"); s.Config() != want {
		t.Errorf("walmart = %v, want %v", s.Config(), want)
	}
}
