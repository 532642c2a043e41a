# Per-round ratios of the interleaved contrib/redis benchmarks (redis.mk):
# acquire+release ÷ INCR+DECR on one server and on the cluster (ns/op, and
# client-cpu-ns/op: the test process's own CPU), and fleet ÷ semaphore
# throughput on the event-loop experiment (healthy-calls/s); prints median
# and range.
function median(a, n,    i, j, t) {
	for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
function metric(name,    i) { for (i = 1; i < NF; i++) if ($(i + 1) == name) return $i; return 0 }
/^Benchmark(Cluster)?AcquireRelease\/fleet/ { k = ($1 ~ /Cluster/) ? "cluster" : "one server"; fw[k] = $3; fc[k] = metric("client-cpu-ns/op") }
/^Benchmark(Cluster)?AcquireRelease\/incr-decr/ {
	k = ($1 ~ /Cluster/) ? "cluster" : "one server"
	if (fw[k]) {
		n[k]++; r[k, n[k]] = fw[k] / $3
		c = metric("client-cpu-ns/op"); if (c && fc[k]) { m[k]++; rc[k, m[k]] = fc[k] / c }
		fw[k] = 0
	}
}
/EventLoop\/semaphore/       { for (i = 1; i <= NF; i++) if ($(i + 1) == "healthy-calls/s") sem = $i }
/EventLoop\/fleet-3/         { for (i = 1; i <= NF; i++) if ($(i + 1) == "healthy-calls/s" && sem) { e[++me] = $i / sem; es[me] = sem; ef[me] = $i; sem = 0 } }
END {
	for (k in n) {
		for (i = 1; i <= n[k]; i++) w[i] = r[k, i]
		mw = median(w, n[k])
		printf "acquire+release ÷ INCR+DECR, %s: wall median %.2fx over %d rounds (range %.2f–%.2f)", k, mw, n[k], w[1], w[n[k]]
		if (m[k]) {
			for (i = 1; i <= m[k]; i++) x[i] = rc[k, i]
			mc = median(x, m[k])
			printf "; client CPU median %.2fx (range %.2f–%.2f)", mc, x[1], x[m[k]]
		}
		printf "\n"
	}
	if (me) {
		mm = median(e, me); mes = median(es, me); mef = median(ef, me)
		printf "event loop, fleet (3 processes) ÷ semaphore: median %.2f over %d rounds (range %.2f–%.2f); semaphore median %.0f, fleet median %.0f healthy calls/s\n", mm, me, e[1], e[me], mes, mef
	}
}
