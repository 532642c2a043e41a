package testkit_test

import (
	"strings"
	"testing"
	"time"

	bulkhead "github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/testkit"
)

func newSemaphore(t *testing.T, name string, cfg bulkhead.Config, opts ...bulkhead.Option) *bulkhead.Semaphore {
	t.Helper()
	bh, err := bulkhead.New(name, cfg, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return bh
}

func TestCheckPermitsPassesWhenEveryPermitCameBack(t *testing.T) {
	bh := newSemaphore(t, "walmart", bulkhead.Config{MaxConcurrentCalls: 2})
	f := runFake(func(tb *fakeTB) {
		testkit.CheckPermits(tb, bh)
		bh.TryAcquirePermission()
		bh.FinishCall()
	})
	wantPass(t, f)
}

func TestCheckPermitsFailsOnHeldPermit(t *testing.T) {
	bh := newSemaphore(t, "walmart", bulkhead.Config{MaxConcurrentCalls: 2})
	f := runFake(func(tb *fakeTB) {
		testkit.CheckPermits(tb, bh)
		bh.TryAcquirePermission()
	})
	wantFailure(t, f, `bulkhead "walmart"`, "1 permit(s) held", "0 call(s) queued")
	bh.ReleasePermission()
}

func TestCheckPermitsFailsOnQueuedCall(t *testing.T) {
	c := testkit.NewVirtualClock(start)
	bh := newSemaphore(t, "target", bulkhead.Config{MaxConcurrentCalls: 1, MaxWaitDuration: time.Second, MaxQueuedCalls: bulkhead.Unbounded}, bulkhead.WithClock(c))
	var a *bulkhead.Acquisition
	f := runFake(func(tb *fakeTB) {
		testkit.CheckPermits(tb, bh)
		bh.TryAcquirePermission()
		a = bh.AcquirePermissionAsync()
	})
	wantFailure(t, f, `bulkhead "target"`, "1 permit(s) held", "1 call(s) queued")
	a.Cancel()
	bh.ReleasePermission()
}

func TestCheckPermitsReadsMetricsAtCleanupNotAtRegistration(t *testing.T) {
	bh := newSemaphore(t, "walmart", bulkhead.Config{MaxConcurrentCalls: 1})
	bh.TryAcquirePermission() // held before the check is registered ...
	f := runFake(func(tb *fakeTB) {
		testkit.CheckPermits(tb, bh)
		bh.ReleasePermission() // ... and given back before the test ends
	})
	wantPass(t, f)
}

func TestCheckPermitsNamesEveryLeakingBulkhead(t *testing.T) {
	r, err := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 3})
	if err != nil {
		panic(err)
	}
	a, _ := r.Get("a")
	if _, err := r.Get("b"); err != nil {
		t.Fatal(err)
	}
	c, _ := r.Get("c")
	f := runFake(func(tb *fakeTB) {
		testkit.CheckPermits(tb, r.All()...)
		a.TryAcquirePermission()
		c.TryAcquirePermission()
		c.TryAcquirePermission()
	})
	wantFailure(t, f, `bulkhead "a"`, `bulkhead "c"`, "2 permit(s) held")
	if msg := f.messages(); strings.Contains(msg, `bulkhead "b"`) {
		t.Errorf("bulkhead b holds nothing but is reported:\n%s", msg)
	}
	a.ReleasePermission()
	c.ReleasePermission()
	c.ReleasePermission()
}

func TestCheckRegistryChecksBulkheadsCreatedDuringTheTest(t *testing.T) {
	r, err := bulkhead.NewRegistry(bulkhead.Config{MaxConcurrentCalls: 1})
	if err != nil {
		panic(err)
	}
	var late *bulkhead.Semaphore
	f := runFake(func(tb *fakeTB) {
		testkit.CheckRegistry(tb, r)
		late, _ = r.Get("created-late")
		late.TryAcquirePermission()
	})
	wantFailure(t, f, `bulkhead "created-late"`, "1 permit(s) held")
	late.ReleasePermission()

	wantPass(t, runFake(func(tb *fakeTB) { testkit.CheckRegistry(tb, r) }))
}

func TestCheckPermitsPanicsOnNilBulkhead(t *testing.T) {
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), "bulkhead #2 is nil") {
			t.Fatalf("recovered %v, want a panic naming the nil bulkhead", r)
		}
	}()
	bh := newSemaphore(t, "ok", bulkhead.DefaultConfig())
	testkit.CheckPermits(t, bh, nil)
}
