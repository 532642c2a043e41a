#!/usr/bin/env python3
"""metricratio.py ROUNDS N CPUS BASE LEAF... -- interleaved comparison of benchmark leaves by the
metrics they report.

Each LEAF is PREFIX:PATH: the full benchmark path (e.g. BenchmarkRegistryPaths/get/names=1000) run
in the test binary registered under PREFIX in $BINS (comma-separated PREFIX=PATH pairs). Every
round runs every leaf once, for each GOMAXPROCS in CPUS (comma-separated), as a fresh process with
-test.benchtime=Nx -test.count=1, round after round, so that a noisy machine's drift falls on all
leaves alike. It prints, per leaf and GOMAXPROCS, the median and range of each metric the benchmark
reports (ns/op, cpu-ns/op, B/op, allocs/op) and the median and range of the per-round ratio of
ns/op and cpu-ns/op to BASE (a leaf as above) at the same GOMAXPROCS. A LEAF written LEAF@OTHER is
compared with OTHER (another leaf of the list) instead of BASE.

Why cpu-ns/op: benchmarks that report the process's CPU time per op of their timed loop (see
BenchmarkRegistryPaths) measure the cost of an op without the time spent waiting for a core, which
on a shared machine drifts with everybody else's load. With GOMAXPROCS 2 it is the time of both
cores: equal cpu-ns/op at 1 and 2 means the op costs each core the same when both run it at once
(no lock or cache line shared between them).
"""
import os, re, statistics, subprocess, sys


def main():
    rounds, n, cpus, base = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3].split(','), sys.argv[4]
    bases = {}
    leaves = []
    for arg in sys.argv[5:]:
        leaf, _, other = arg.partition('@')
        leaves.append(leaf)
        bases[leaf] = other or base
    if base not in leaves:
        leaves = [base] + leaves
        bases[base] = base
    bins = dict(p.split('=', 1) for p in os.environ['BINS'].split(','))
    anchor = lambda p: '/'.join('^' + re.escape(x) + '$' for x in p.split('/'))
    res = {}  # (leaf, cpu) -> metric -> [values per round]
    for _ in range(rounds):
        for leaf in leaves:
            kind, path = leaf.split(':', 1)
            for cpu in cpus:
                out = subprocess.run([bins[kind], '-test.run', '^$', '-test.bench', anchor(path),
                                      '-test.cpu', cpu, '-test.count', '1', '-test.benchmem',
                                      '-test.benchtime', '%dx' % n], capture_output=True, text=True).stdout
                line = next((l for l in out.splitlines() if l.startswith('Benchmark')), None)
                if line is None:
                    sys.exit('no result for %s at -cpu %s:\n%s' % (leaf, cpu, out[-800:]))
                f = line.split()
                m = res.setdefault((leaf, cpu), {})
                for i in range(2, len(f) - 1, 2):
                    m.setdefault(f[i + 1], []).append(float(f[i]))

    def med(xs):
        return '%.1f (%.1f-%.1f)' % (statistics.median(xs), min(xs), max(xs))

    def ratio(leaf, cpu, metric):
        a, b = res[(leaf, cpu)].get(metric), res[(bases[leaf], cpu)].get(metric)
        if not a or not b:
            return '-'
        r = [x / y for x, y in zip(a, b)]
        return '%.2f (%.2f-%.2f)' % (statistics.median(r), min(r), max(r))

    print('| leaf | -cpu | ns/op | cpu-ns/op | B/op, allocs/op | base | ns/op ÷ base | cpu-ns/op ÷ base |')
    print('|---|---|---|---|---|---|---|---|')
    for leaf in leaves:
        for cpu in cpus:
            m = res[(leaf, cpu)]
            print('| %s | %s | %s | %s | %g, %g | %s | %s | %s |' % (
                leaf, cpu, med(m['ns/op']), med(m['cpu-ns/op']) if 'cpu-ns/op' in m else '-',
                statistics.median(m.get('B/op', [0])), statistics.median(m.get('allocs/op', [0])),
                bases[leaf], ratio(leaf, cpu, 'ns/op'), ratio(leaf, cpu, 'cpu-ns/op')))
    print('%d rounds, -test.benchtime %dx, ranges are min-max over the rounds' % (rounds, n))


if __name__ == '__main__':
    main()
