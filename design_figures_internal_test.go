package bulkhead

import (
	"fmt"
	"regexp"
	"runtime"
	"slices"
	"testing"
	"time"
	"unsafe"

	"github.com/rxbulkhead/bulkhead/internal/docfigures"
)

// designFigure returns the number the first submatch of re finds in
// docs/design.md's text (its lines joined, as a reader sees them).
func designFigure(t *testing.T, re *regexp.Regexp) float64 {
	t.Helper()
	v, err := docfigures.Find("docs/design.md", re)
	if err != nil {
		t.Fatal(err)
	}
	return v[0]
}

// TestDesignMdSaysWhatAnIdleBulkheadCosts checks design.md's figures of an
// idle bulkhead against the code: the Semaphore struct's size exactly (it
// is what a bulkhead that was never full costs: its wait state is
// allocated at its first wait), and the heap a registry of 500 of them
// takes, measured as BenchmarkRegistry500Partners does (the median of
// five), within 5 %. It
// failed when design.md still said 112 bytes and "under 100 KB" for a
// 120-byte struct and a 120 KiB registry.
func TestDesignMdSaysWhatAnIdleBulkheadCosts(t *testing.T) {
	if unsafe.Sizeof(uintptr(0)) != 8 {
		t.Skip("the figures are for 64-bit platforms")
	}
	size := designFigure(t, regexp.MustCompile(`an idle bulkhead is a (\d+)-byte struct`))
	if got := unsafe.Sizeof(Semaphore{}); float64(got) != size {
		t.Errorf("unsafe.Sizeof(Semaphore{}) = %d, design.md says %g", got, size)
	}

	kib := designFigure(t, regexp.MustCompile(`500-partner registry[^.]*? takes about (\d+) KiB`))
	heap := func() uint64 {
		runtime.GC()
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	// HeapAlloc is the whole process's: a goroutine another test left
	// behind (a timer's, a delivery's) allocating meanwhile adds to one
	// measurement (126 KiB once in make test), so the median of five.
	var kibs []float64
	for range 5 {
		before := heap()
		r, err := NewRegistry(Config{MaxConcurrentCalls: 20, MaxWaitDuration: 50 * time.Millisecond, MaxQueuedCalls: 100})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 500 {
			if _, err := r.Get(fmt.Sprintf("partner-%03d", i)); err != nil {
				t.Fatal(err)
			}
		}
		kibs = append(kibs, float64(heap()-before)/1024)
		runtime.KeepAlive(r)
	}
	slices.Sort(kibs)
	got := kibs[len(kibs)/2]
	t.Logf("Semaphore: %d B; a registry of 500: %.1f KiB (design.md: %g B, about %g KiB)", unsafe.Sizeof(Semaphore{}), got, size, kib)
	if d := got - kib; d > 0.05*kib || d < -0.05*kib {
		t.Errorf("a registry of 500 idle bulkheads takes %.1f KiB, design.md says about %g KiB (±5 %%)", got, kib)
	}
}
