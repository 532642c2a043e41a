package main

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// key names one benchmark result: BenchmarkTryAcquire/xsync-2 is
// {Bench: "TryAcquire", Peer: "xsync", Procs: 2}.
type key struct {
	Bench string
	Peer  string
	Procs int
}

// results maps a benchmark to its samples per unit ("ns/op", "B/op",
// "heapB/waiter", ...), one sample per -count run.
type results map[key]map[string][]float64

// parseBench reads `go test -bench` text output (several runs may be
// concatenated) and returns every sample. Lines that are not benchmark
// results are skipped; a malformed result line is an error naming it.
func parseBench(r io.Reader) (results, error) {
	res := results{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		if _, err := strconv.Atoi(f[1]); err != nil {
			continue // e.g. "BenchmarkX ... --- FAIL" lines
		}
		k, err := parseName(f[0])
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		if len(f)%2 != 0 {
			return nil, fmt.Errorf("line %d: want value/unit pairs after the iteration count: %q", line, sc.Text())
		}
		m := res[k]
		if m == nil {
			m = map[string][]float64{}
			res[k] = m
		}
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return nil, fmt.Errorf("line %d: value %q of %s: %w", line, f[i], f[i+1], err)
			}
			m[f[i+1]] = append(m[f[i+1]], v)
		}
	}
	return res, sc.Err()
}

// parseName splits "BenchmarkTryAcquire/xsync-2" into its parts. Without a
// "-N" suffix the benchmark ran with GOMAXPROCS=1.
func parseName(name string) (key, error) {
	name = strings.TrimPrefix(name, "Benchmark")
	procs := 1
	if i := strings.LastIndexByte(name, '-'); i >= 0 {
		if n, err := strconv.Atoi(name[i+1:]); err == nil {
			procs, name = n, name[:i]
		}
	}
	bench, peer, ok := strings.Cut(name, "/")
	if !ok || bench == "" || peer == "" {
		return key{}, fmt.Errorf("benchmark %q: want BenchmarkName/peer", "Benchmark"+name)
	}
	return key{Bench: bench, Peer: peer, Procs: procs}, nil
}

// median returns the median of the samples of unit for k, and false if
// there are none.
func (r results) median(k key, unit string) (float64, bool) {
	s := slices.Clone(r[k][unit])
	if len(s) == 0 {
		return 0, false
	}
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2], true
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2, true
}

// peers returns the peers that ran bench, in first-seen order of the
// canonical list (rxbulkhead first), then any others sorted.
func (r results) peers(bench string, order []string) []string {
	seen := map[string]bool{}
	for k := range r {
		if k.Bench == bench {
			seen[k.Peer] = true
		}
	}
	var out []string
	for _, p := range order {
		if seen[p] {
			out = append(out, p)
			delete(seen, p)
		}
	}
	var rest []string
	for p := range seen {
		rest = append(rest, p)
	}
	slices.Sort(rest)
	return append(out, rest...)
}

// procs returns the GOMAXPROCS values bench ran with, ascending.
func (r results) procs(bench string) []int {
	var out []int
	for k := range r {
		if k.Bench == bench && !slices.Contains(out, k.Procs) {
			out = append(out, k.Procs)
		}
	}
	slices.Sort(out)
	return out
}
