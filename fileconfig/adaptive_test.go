package fileconfig_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/adaptive"
	"github.com/rxbulkhead/bulkhead/fileconfig"
	"github.com/rxbulkhead/bulkhead/testkit"
)

func decodeAdaptiveJSON(t *testing.T, text string) (fileconfig.File, error) {
	t.Helper()
	var f fileconfig.File
	err := json.Unmarshal([]byte(text), &f)
	return f, err
}

// watchAdaptiveOnVirtualTime makes f's registry and WatchAdaptive's
// controllers on one virtual clock, checked for leaked permits and
// stopped at the end of the test.
func watchAdaptiveOnVirtualTime(t *testing.T, f fileconfig.File) (*bulkhead.Registry, *adaptive.Registry, *testkit.VirtualClock) {
	t.Helper()
	clock := testkit.NewVirtualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	reg, err := fileconfig.NewRegistry(f, bulkhead.WithSemaphoreOptions(bulkhead.WithClock(clock)))
	if err != nil {
		t.Fatal(err)
	}
	testkit.CheckRegistry(t, reg)
	ar, err := fileconfig.WatchAdaptive(reg, f, adaptive.WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ar.Stop)
	return reg, ar, clock
}

func TestAdaptiveSectionResolvesWithInheritance(t *testing.T) {
	f, err := decodeAdaptiveJSON(t, `{
	  "configs": {"default": {"maxConcurrentCalls": 20},
	              "elastic": {"adaptive": {"Algorithm": "Gradient2", "min": 5, "max": 200}}},
	  "instances": {"walmart": {"baseConfig": "elastic", "adaptive": {"max": 50}},
	                "target": {},
	                "kroger": {"adaptive": {}}}
	}`)
	if err != nil {
		t.Fatal(err)
	}
	res, err := f.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	w := res.Instances["walmart"].Adaptive
	if w == nil || w.Algorithm != "gradient2" || w.Config.Min != 5 || w.Config.Max != 50 {
		t.Fatalf("walmart: %+v", w)
	}
	if _, ok := w.Config.Algorithm().(*adaptive.Gradient2); !ok {
		t.Fatalf("walmart's algorithm is %T", w.Config.Algorithm())
	}
	if a := res.Instances["target"].Adaptive; a != nil {
		t.Fatalf("target inherits no adaptive section, got %+v", a)
	}
	if k := res.Instances["kroger"].Adaptive; k == nil || k.Config.Algorithm != nil || k.Algorithm != "" {
		t.Fatalf("kroger: want the defaults, got %+v", k)
	}
}

// hinge needs per-call samples and unbounded cuts (see adaptive.Hinge): a
// file naming it gets them, and an entry that names another algorithm
// over an inherited hinge does not keep them.
func TestAdaptiveHingeSetsPerCallAndMaxCutAndAnotherAlgorithmResetsThem(t *testing.T) {
	f, err := decodeAdaptiveJSON(t, `{
	  "configs": {"hinged": {"adaptive": {"algorithm": "Hinge", "max": 300}}},
	  "instances": {"walmart": {"baseConfig": "hinged"},
	                "kroger": {"baseConfig": "hinged", "adaptive": {"algorithm": "aimd"}}}
	}`)
	if err != nil {
		t.Fatal(err)
	}
	res, err := f.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	w := res.Instances["walmart"].Adaptive
	if w == nil || w.Algorithm != adaptive.NameHinge || !w.Config.Window.PerCall || w.Config.MaxCutPerSecond != 1 || w.Config.Max != 300 {
		t.Fatalf("walmart: %+v", w)
	}
	if _, ok := w.Config.Algorithm().(*adaptive.Hinge); !ok {
		t.Fatalf("walmart's algorithm is %T", w.Config.Algorithm())
	}
	k := res.Instances["kroger"].Adaptive
	if k == nil || k.Algorithm != adaptive.NameAIMD || k.Config.Window.PerCall || k.Config.MaxCutPerSecond != 0 || k.Config.Max != 300 {
		t.Fatalf("kroger: %+v", k)
	}
}

func TestAdaptiveSectionErrorsNameTheSubkey(t *testing.T) {
	for text, want := range map[string]string{
		`{"instances": {"walmart": {"adaptive": {"algorithm": "pid"}}}}`:        `bulkhead "walmart": adaptive.algorithm "pid": unknown algorithm (known: aimd, vegas, gradient2, capacity, setpoint, hinge)`,
		`{"instances": {"walmart": {"adaptive": {"min": -1}}}}`:                 `bulkhead "walmart": adaptive.min -1: want an integer >= 0, got a number`,
		`{"instances": {"walmart": {"adaptive": {"min": 10, "max": 5}}}}`:       `bulkhead "walmart": adaptive.max 5: must be >= Min (10)`,
		`{"instances": {"walmart": {"adaptive": {"step": 1}}}}`:                 `bulkhead "walmart": adaptive.step: unknown key (known: algorithm, initial, max, min)`,
		`{"instances": {"walmart": {"adaptive": "gradient2"}}}`:                 `bulkhead "walmart": adaptive "gradient2": want a mapping of settings, got a string`,
		`{"configs": {"default": {"adaptive": {"max": 0.5}}}, "instances": {}}`: `bulkhead config "default": adaptive.max 0.5: want an integer >= 0, got a number`,
		`{"instances": {"walmart": {"store": "redis", "adaptive": {}}}}`:        `bulkhead "walmart": adaptive: needs a local store: a redis store's limit is shared by every replica, which one controller per process cannot adapt`,
	} {
		_, err := decodeAdaptiveJSON(t, text)
		if err == nil || err.Error() != want {
			t.Errorf("%s:\n got %v\nwant %s", text, err, want)
		}
		if !errors.Is(err, bulkhead.ErrInvalidConfig) {
			t.Errorf("%s: error does not match bulkhead.ErrInvalidConfig", text)
		}
	}
}

// The instances with an adaptive section adapt, from the semaphores'
// events, while they are used directly; the others keep their limit.
func TestWatchAdaptiveAdaptsOnlyTheInstancesThatSayso(t *testing.T) {
	f, err := decodeAdaptiveJSON(t, `{
	  "configs": {"default": {"maxConcurrentCalls": 10}},
	  "instances": {"walmart": {"adaptive": {"algorithm": "aimd", "max": 12}}, "target": {}}
	}`)
	if err != nil {
		t.Fatal(err)
	}
	reg, ar, clock := watchAdaptiveOnVirtualTime(t, f)
	for range 3 { // three windows with every permit in use
		for _, name := range []string{"walmart", "target", "kroger"} {
			sem, _ := reg.Get(name)
			n := sem.Config().MaxConcurrentCalls
			for range n {
				sem.TryAcquirePermission()
			}
			clock.Advance(300 * time.Millisecond)
			for range n {
				sem.FinishCall()
			}
		}
	}
	for name, want := range map[string]int{"walmart": 12, "target": 10, "kroger": 10} {
		sem, _ := reg.Find(name)
		if got := sem.Config().MaxConcurrentCalls; got != want {
			t.Errorf("%s: limit %d, want %d", name, got, want)
		}
	}
	if _, err := ar.Get("target"); !errors.Is(err, adaptive.ErrNotAdaptive) {
		t.Errorf("target: %v, want ErrNotAdaptive", err)
	}
}

func TestWatchAdaptiveWithAnAdaptiveDefaultAdaptsEveryBulkhead(t *testing.T) {
	f, err := decodeAdaptiveJSON(t, `{"configs": {"default": {"maxConcurrentCalls": 10, "adaptive": {"algorithm": "aimd"}}}}`)
	if err != nil {
		t.Fatal(err)
	}
	reg, err := fileconfig.NewRegistry(f)
	if err != nil {
		t.Fatal(err)
	}
	ar, err := fileconfig.WatchAdaptive(reg, f)
	if err != nil {
		t.Fatal(err)
	}
	defer ar.Stop()
	b, err := ar.Get("anyone")
	if err != nil {
		t.Fatal(err)
	}
	if b.Stats().Limit != 10 {
		t.Errorf("limit %d, want 10", b.Stats().Limit)
	}
}

// WatchAdaptive takes algorithm hinge, with the configuration it needs
// (per-call samples): a Lease's finish carries its duration, so a call that
// overtakes an older one is timed from its own grant (20 ms here), not
// matched with the oldest (which would give 30 ms).
func TestWatchAdaptiveFeedsHingeEachLeasesOwnRTT(t *testing.T) {
	f, err := decodeAdaptiveJSON(t, `{"configs": {"default": {"maxConcurrentCalls": 10}},
	  "instances": {"walmart": {"adaptive": {"algorithm": "hinge"}}}}`)
	if err != nil {
		t.Fatal(err)
	}
	reg, ar, clock := watchAdaptiveOnVirtualTime(t, f)
	first, err := reg.TryAcquirePermission("walmart", bulkhead.CallOptions{})
	if err != nil {
		t.Fatal(err)
	}
	clock.Advance(10 * time.Millisecond)
	second, err := reg.TryAcquirePermission("walmart", bulkhead.CallOptions{})
	if err != nil {
		t.Fatal(err)
	}
	clock.Advance(20 * time.Millisecond)
	second.FinishCall()
	b, err := ar.Get("walmart")
	if err != nil {
		t.Fatal(err)
	}
	if st := b.Stats(); st.Windows != 1 || st.RTT != 20*time.Millisecond {
		t.Errorf("after the second call: %d samples, RTT %v; want 1 per-call sample of 20ms", st.Windows, st.RTT)
	}
	first.FinishCall()
	if st := b.Stats(); st.Windows != 2 || st.RTT != 30*time.Millisecond {
		t.Errorf("after the first call: %d samples, RTT %v; want 2, 30ms", st.Windows, st.RTT)
	}
}
