# Per-round ratios of the interleaved contrib/redis benchmarks (redis.mk):
# acquire+release ÷ INCR+DECR (ns/op), and fleet ÷ semaphore throughput on
# the event-loop experiment (healthy-calls/s); prints median and range.
function median(a, n,    i, j, t) {
	for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
/AcquireRelease\/fleet/      { fleet = $3 }
/AcquireRelease\/incr-decr/  { if (fleet) { r[++n] = fleet / $3; f[n] = fleet; p[n] = $3; fleet = 0 } }
/EventLoop\/semaphore/       { for (i = 1; i <= NF; i++) if ($(i + 1) == "healthy-calls/s") sem = $i }
/EventLoop\/fleet-3/         { for (i = 1; i <= NF; i++) if ($(i + 1) == "healthy-calls/s" && sem) { e[++m] = $i / sem; es[m] = sem; ef[m] = $i; sem = 0 } }
END {
	if (n) {
		mr = median(r, n); mf = median(f, n); mp = median(p, n)
		printf "acquire+release ÷ INCR+DECR: median %.2fx over %d rounds (range %.2f–%.2f); fleet median %.0f ns/op, INCR+DECR median %.0f ns/op\n", mr, n, r[1], r[n], mf, mp
	}
	if (m) {
		me = median(e, m); mes = median(es, m); mef = median(ef, m)
		printf "event loop, fleet (3 processes) ÷ semaphore: median %.2f over %d rounds (range %.2f–%.2f); semaphore median %.0f, fleet median %.0f healthy calls/s\n", me, m, e[1], e[m], mes, mef
	}
}
