#!/usr/bin/env bash
# scale.sh NEWBIN ROUNDS SIZES [OLDBIN [LOCKBIN]]
#
# Runs every leaf of BenchmarkScale (bench/scale_test.go) for each N in SIZES
# (comma-separated), each leaf in a process of its own, round after round,
# so that the drift of a noisy machine falls on every peer alike. With
# OLDBIN (the same benchmark built against an older core), its rxbulkhead
# leaf runs right after the new binary's, renamed rxbulkhead-old; with
# LOCKBIN (the new benchmark built with -tags bulkheadlockhold, whose two
# clock readings per lock hold inflate the time), its rxbulkhead leaf runs
# too, renamed rxbulkhead-lockhold, for the longest lock hold. Prints the
# benchmark lines. Iterations per leaf: 50 at N <= 1e3, 10 at 1e4, 2 at
# 1e5, 1 above.
set -euo pipefail
new=$1 rounds=$2 sizes=$3 old=${4:-} lock=${5:-}
quote() { sed 's/[][\.*^$+?(){}|]/\\&/g'; }
leaves=$("$new" -test.run '^$' -test.bench '^BenchmarkScale$' -test.benchtime 1x -scale.sizes 1 |
	tee >(grep -E '^(goos|goarch|pkg|cpu):' >&2) |
	awk '/^BenchmarkScale/ {print $1}' | sed 's/-[0-9]*$//')
[ -n "$leaves" ] || { echo "scale.sh: no BenchmarkScale leaf" >&2; exit 1; }
anchor() { echo "$1" | tr '/' '\n' | quote | sed 's/.*/^&$/' | paste -sd/; }
for ((r = 1; r <= rounds; r++)); do
	for n in ${sizes//,/ }; do
		if ((n <= 1000)); then it=50x; elif ((n <= 10000)); then it=10x; elif ((n <= 100000)); then it=2x; else it=1x; fi
		for leaf in $leaves; do
			l=${leaf/N=1\//N=$n/}
			"$new" -test.run '^$' -test.bench "$(anchor "$l")" -test.benchtime $it -scale.sizes "$n" | grep -E '^Benchmark' || true
			if [ -n "$old" ] && [[ $l == */rxbulkhead ]]; then
				"$old" -test.run '^$' -test.bench "$(anchor "$l")" -test.benchtime $it -scale.sizes "$n" |
					grep -E '^Benchmark' | sed 's#/rxbulkhead-#/rxbulkhead-old-#' || true
			fi
			if [ -n "$lock" ] && [[ $l == */rxbulkhead ]]; then
				"$lock" -test.run '^$' -test.bench "$(anchor "$l")" -test.benchtime $it -scale.sizes "$n" |
					grep -E '^Benchmark' | sed 's#/rxbulkhead-#/rxbulkhead-lockhold-#' || true
			fi
		done
	done
done
