package main

import (
	"strings"
	"testing"
)

const sample = `goos: linux
goarch: amd64
pkg: github.com/rxbulkhead/bulkhead/bench
cpu: AMD EPYC
BenchmarkTryAcquire/rxbulkhead         	 8852662	        12.00 ns/op	       0 B/op	       0 allocs/op
BenchmarkTryAcquire/rxbulkhead         	 8852662	        14.00 ns/op	       0 B/op	       0 allocs/op
BenchmarkTryAcquire/rxbulkhead         	 8852662	        13.00 ns/op	       0 B/op	       0 allocs/op
BenchmarkTryAcquire/xsync-2            	12002124	        10.00 ns/op	       0 B/op	       0 allocs/op
BenchmarkTryAcquire/rxbulkhead-pool-2  	12002124	        90.00 ns/op	      16 B/op	       1 allocs/op
--- FAIL: BenchmarkTryAcquire/pool
BenchmarkCostWaiter/xsync-2              	       1	 734939368 ns/op	         1.000 goroutines/waiter	       793.2 heapB/waiter	      2077 stackB/waiter
PASS
ok  	github.com/rxbulkhead/bulkhead/bench	9.004s
`

func TestParseBenchReadsNamesProcsAndUnits(t *testing.T) {
	res, err := parseBench(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := res.median(key{"TryAcquire", "rxbulkhead", 1}, "ns/op"); !ok || got != 13 {
		t.Errorf("median ns/op of TryAcquire/rxbulkhead at P=1 = %v, %v; want 13 (no suffix means GOMAXPROCS=1)", got, ok)
	}
	if got, _ := res.median(key{"TryAcquire", "xsync", 2}, "ns/op"); got != 10 {
		t.Errorf("TryAcquire/xsync-2 ns/op = %v; want 10", got)
	}
	if got, _ := res.median(key{"TryAcquire", "rxbulkhead-pool", 2}, "allocs/op"); got != 1 {
		t.Errorf("a peer name with a dash lost its suffix: allocs/op = %v; want 1", got)
	}
	if got, _ := res.median(key{"CostWaiter", "xsync", 2}, "stackB/waiter"); got != 2077 {
		t.Errorf("custom unit stackB/waiter = %v; want 2077", got)
	}
	if got := res.peers("TryAcquire", peerOrder); strings.Join(got, ",") != "rxbulkhead,rxbulkhead-pool,xsync" {
		t.Errorf("peers = %v; want rxbulkhead, rxbulkhead-pool, xsync in the canonical order", got)
	}
	if got := res.procs("TryAcquire"); len(got) != 2 || got[0] != 1 || got[1] != 2 {
		t.Errorf("procs = %v; want [1 2]", got)
	}
}

func TestParseBenchNamesTheBadLine(t *testing.T) {
	for _, in := range []string{
		"BenchmarkTryAcquire-2 100 5 ns/op\n",
		"BenchmarkX/y 100 five ns/op\n",
		"BenchmarkX/y 100 5 ns/op 7\n",
	} {
		_, err := parseBench(strings.NewReader(in))
		if err == nil || !strings.Contains(err.Error(), "line 1") {
			t.Errorf("parseBench(%q) error = %v; want one naming line 1", in, err)
		}
	}
}

func TestMedianOfEvenCountAveragesTheMiddle(t *testing.T) {
	r := results{key{"A", "p", 1}: {"ns/op": {4, 1, 3, 2}}}
	if got, _ := r.median(key{"A", "p", 1}, "ns/op"); got != 2.5 {
		t.Errorf("median = %v; want 2.5", got)
	}
	if _, ok := r.median(key{"A", "q", 1}, "ns/op"); ok {
		t.Error("median of a missing benchmark reported ok")
	}
}
