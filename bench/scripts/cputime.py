#!/usr/bin/env python3
"""cputime.py ROUNDS N CPU BENCH BASE LEAF... -- interleaved CPU-time comparison of benchmark leaves.

Runs every LEAF (a sub-benchmark path under BenchmarkBENCH, e.g. bg/xsync, or empty for
BenchmarkBENCH itself: "old:" in the binary registered as old) once per round, round
after round, each as a fresh test-binary process with a fixed iteration count
(-test.benchtime=Nx, -test.cpu=CPU), and records both the ns/op go test reports (wall time) and
the process's CPU time (user + system, from wait4, minus the binary's start-up cost) per
iteration. It prints, per leaf, the medians and the median and interquartile range of the
per-round ratio to BASE (a leaf path, with its binary's prefix if any, e.g. old:get/n=1; or,
without a slash or a prefix, the last path element: each leaf is then compared with the leaf of
the same path ending in BASE, e.g. cancel/rxbulkhead with cancel/xsync).

Why CPU time: on a machine shared with other busy processes, a benchmark's wall time includes
the time its threads wait for a CPU, which drifts with everybody else's load; its own CPU time
drifts far less. With GOMAXPROCS=1 CPU time per op is the cost of an op; with more Ps it also
counts idle Ps spinning for work, so read the wall-time ratio next to it.

Binaries: $BINS, comma-separated PREFIX=PATH pairs; a leaf "main:bg/xsync" runs in the binary
registered as main, a leaf without prefix in the one registered with an empty prefix
(default: BINS==bench.test). Extra test flags: $EXTRA. With DIFF=1 it also prints, per leaf, the
median and range (min-max) of the per-round difference to BASE in ns/op, CPU and wall: what a
leaf adds per op (the cost of metrics per call, say), not only its ratio. With RANGE=1 it also
prints, per leaf, the range (min-max) of the per-round ratio to BASE.
"""
import os, re, statistics, sys

def main():
    rounds, n, cpu, bench, base = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
    leaves = sys.argv[6:]
    bins = dict(p.split('=', 1) for p in os.environ.get('BINS', '=bench.test').split(','))
    extra = os.environ.get('EXTRA', '').split()
    out_path = '/tmp/cputime.%d.out' % os.getpid()

    def run(binp, args):
        pid = os.fork()
        if pid == 0:
            fd = os.open(out_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
            os.dup2(fd, 1)
            os.dup2(fd, 2)
            os.execv(binp, [binp] + args)
        _, _, ru = os.wait4(pid, 0)
        with open(out_path) as f:
            return ru.ru_utime + ru.ru_stime, f.read()

    start = {k: statistics.median(run(v, ['-test.run', '^$', '-test.bench', '^$'])[0] for _ in range(3))
             for k, v in bins.items()}
    res = {l: {'wall': [], 'cpu': [], 'mem': ''} for l in leaves}
    anchor = lambda p: '/'.join('^' + re.escape(x) + '$' for x in p.split('/'))
    for _ in range(rounds):
        for l in leaves:
            kind, name = l.split(':', 1) if ':' in l else ('', l)
            sub = '/' + anchor(name) if name else ''  # an empty leaf ("old:") is BenchmarkBENCH itself
            cpu_s, out = run(bins[kind], ['-test.run', '^$', '-test.bench', '^Benchmark' + bench + '$' + sub,
                                          '-test.cpu', cpu, '-test.count', '1', '-test.benchmem',
                                          '-test.benchtime', '%dx' % n] + extra)
            m = re.search(r'^Benchmark\S+\s+\d+\s+([\d.]+) ns/op\s+([\d.]+) B/op\s+([\d.]+) allocs/op', out, re.M)
            if not m:
                sys.exit('no result for %s:\n%s' % (l, out[-800:]))
            res[l]['wall'].append(float(m.group(1)))
            res[l]['cpu'].append((cpu_s - start[kind]) * 1e9 / n)
            res[l]['mem'] = '%s B/op %s allocs/op' % (m.group(2), m.group(3))
    os.remove(out_path)

    def q(xs):
        xs = sorted(xs)
        return statistics.median(xs), xs[len(xs) // 4], xs[(3 * len(xs)) // 4]
    for l in leaves:
        b = base
        if '/' not in base and ':' not in base and '/' in l:  # same path, last element replaced by base
            b = l.split(':', 1)[-1].rsplit('/', 1)[0] + '/' + base
        w, c = res[l]['wall'], res[l]['cpu']
        mc, lc, hc = q([x / y for x, y in zip(c, res[b]['cpu'])])
        mw, lw, hw = q([x / y for x, y in zip(w, res[b]['wall'])])
        print('%-30s wall %7.1f ns/op  cpu %7.1f ns/op | cpu/%s %.2f (IQR %.2f-%.2f)  wall %.2f (IQR %.2f-%.2f) | %s | %d rounds'
              % (l, statistics.median(w), statistics.median(c), b, mc, lc, hc, mw, lw, hw, res[l]['mem'], len(c)))
        if os.environ.get('RANGE'):
            rc = sorted(x / y for x, y in zip(c, res[b]['cpu']))
            rw = sorted(x / y for x, y in zip(w, res[b]['wall']))
            print('%-30s range of cpu/%s %.2f-%.2f  wall %.2f-%.2f' % ('', b, rc[0], rc[-1], rw[0], rw[-1]))
        if os.environ.get('DIFF'):
            dc = sorted(x - y for x, y in zip(c, res[b]['cpu']))
            dw = sorted(x - y for x, y in zip(w, res[b]['wall']))
            print('%-30s minus %s: cpu %+.1f ns/op (%+.1f..%+.1f)  wall %+.1f ns/op (%+.1f..%+.1f)'
                  % ('', b, statistics.median(dc), dc[0], dc[-1], statistics.median(dw), dw[0], dw[-1]))

if __name__ == '__main__':
    main()
