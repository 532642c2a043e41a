#!/usr/bin/env python3
"""allmetrics.py ROUNDS N CPU BENCH BASE LEAF... -- interleaved comparison of every metric a benchmark reports.

Like cputime.py, and unlike metricratio.py (which prints a fixed set of columns) it prints
every metric a leaf reports (e.g. created/op). For benchmarks that measure their own timed part (BenchmarkReleaseChain reports
cpu-ns/op over the chain alone, where a process's CPU time would count the set-up of b.N waiters,
a goroutine each for x/sync): runs every LEAF once per round, round after round, each as a fresh
process with -test.benchtime=Nx and -test.cpu=CPU, and prints per leaf the median and range of
every metric it reports, and the median and range of the per-round ratio of ns/op and cpu-ns/op
to BASE (a leaf path; or, without a slash, the leaf of the same path ending in BASE).

Binaries: $BINS, comma-separated PREFIX=PATH pairs; a leaf "old:chain/rxbulkhead" runs in the binary
registered as old, a leaf without prefix in the one registered with an empty prefix. Extra test
flags: $EXTRA.
"""
import os, re, statistics, subprocess, sys

def main():
    rounds, n, cpu, bench, base = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
    leaves = sys.argv[6:]
    bins = dict(p.split('=', 1) for p in os.environ.get('BINS', '=bench.test').split(','))
    extra = os.environ.get('EXTRA', '').split()
    anchor = lambda p: '/'.join('^' + re.escape(x) + '$' for x in p.split('/'))
    res = {l: {} for l in leaves}
    for _ in range(rounds):
        for l in leaves:
            kind, name = l.split(':', 1) if ':' in l else ('', l)
            out = subprocess.run([bins[kind], '-test.run', '^$', '-test.bench', '^Benchmark' + bench + '$/' + anchor(name),
                                  '-test.cpu', cpu, '-test.count', '1', '-test.benchmem',
                                  '-test.benchtime', '%dx' % n] + extra, capture_output=True, text=True).stdout
            line = next((x for x in out.splitlines() if x.startswith('Benchmark')), None)
            if line is None:
                sys.exit('no result for %s:\n%s' % (l, out[-800:]))
            for value, unit in re.findall(r'([\d.]+) (\S+/op)', line):
                res[l].setdefault(unit, []).append(float(value))
    for l in leaves:
        b = base
        if '/' not in base and '/' in l:
            b = l.split(':', 1)[-1].rsplit('/', 1)[0] + '/' + base
        parts = []
        for unit, xs in res[l].items():
            parts.append('%s %.4g [%.4g-%.4g]' % (unit, statistics.median(xs), min(xs), max(xs)))
        for unit in ('ns/op', 'cpu-ns/op'):
            if unit in res[l] and unit in res.get(b, {}):
                r = [x / y for x, y in zip(res[l][unit], res[b][unit])]
                parts.append('%s/%s %.2f [%.2f-%.2f]' % (unit, b, statistics.median(r), min(r), max(r)))
        print('%-28s %s | %d rounds' % (l, ' '.join(parts), rounds))

if __name__ == '__main__':
    main()
