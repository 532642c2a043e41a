package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
)

// With -adaptive, walmart's limit starts at its static value, falls when
// walmart slows down, and the healthy partners reject nothing.
func TestAdaptiveWalmartLimitFollowsItsSlowdown(t *testing.T) {
	o := shortOptions()
	r := simulateInBubble(t, adaptiveMode, o)
	trace := lastLimitTrace.Load()
	if trace == nil {
		t.Fatal("the adaptive run left no limit trace")
	}
	limits := trace.values()
	slowBin := int(o.slowAfter / o.bin)
	before, after := limits[slowBin-1], limits[len(limits)-1]
	t.Logf("walmart's limit per %v: %v", o.bin, limits)
	if before < o.permits/2 {
		t.Errorf("limit %d before the slow-down, want about the static %d", before, o.permits)
	}
	if after > before/2 {
		t.Errorf("limit %d at the end, %d before the slow-down: want it to fall", after, before)
	}
	if got := r.healthy.rejected.Load(); got != 0 {
		t.Errorf("healthy partners had %d rejections; want 0", got)
	}
	var out bytes.Buffer
	printLimitTrace(&out)
	if !strings.Contains(out.String(), "walmart's adaptive limit") || !strings.Contains(out.String(), "|") {
		t.Errorf("printLimitTrace wrote %q", out.String())
	}
	out.Reset()
	printLimitTrace(&out)
	if out.Len() != 0 {
		t.Errorf("printed twice: %q", out.String())
	}
}

// The -adaptive flag adds the adaptive run to the table and prints
// walmart's limit over it; the chart still draws.
func TestRunWithAdaptiveFlag(t *testing.T) {
	chart := filepath.Join(t.TempDir(), "hub.png")
	var out, progress bytes.Buffer
	synctest.Test(t, func(t *testing.T) {
		err := runOn(newPipes(), []string{"-partners", "20", "-rate", "400", "-duration", "1s", "-slow-after", "300ms", "-quiet", "-pool=false", "-adaptive", "-chart", chart, "-metrics", "", "-month-end=false"}, &out, &progress)
		if err != nil {
			t.Fatal(err)
		}
	})
	for _, want := range []string{"bulkheadhttp, adaptive", "walmart's adaptive limit every 250ms (| walmart slows 10x):", "chart: " + chart} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if _, err := os.Stat(chart); err != nil {
		t.Error(err)
	}
}
