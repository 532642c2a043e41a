#!/usr/bin/env bash
# interleave.sh TESTBINARY ROUNDS BENCHREGEX CPULIST [TESTFLAGS...]
#
# Runs every leaf benchmark matched by BENCHREGEX once per round, for each
# GOMAXPROCS in CPULIST (comma-separated), round after round, so that the
# drift of a noisy machine falls on every peer alike instead of between
# them (go test -count N runs one benchmark N times in a row). Prints the
# go test output of all runs, which benchstat and benchdoc read as usual.
set -euo pipefail
bin=$1 rounds=$2 re=$3 cpus=$4
shift 4
quote() { sed 's/[][\.*^$+?(){}|]/\\&/g'; }
# Discover the leaves (and print the header lines once).
leaves=$("$bin" -test.run '^$' -test.bench "$re" -test.benchtime 1x -test.cpu 1 "$@" |
	tee >(grep -E '^(goos|goarch|pkg|cpu):' >&2) |
	awk '/^Benchmark/ {print $1}')
[ -n "$leaves" ] || { echo "interleave.sh: no benchmark matches $re" >&2; exit 1; }
for ((r = 1; r <= rounds; r++)); do
	for leaf in $leaves; do
		anchored=$(echo "$leaf" | tr '/' '\n' | quote | sed 's/.*/^&$/' | paste -sd/)
		for cpu in ${cpus//,/ }; do
			"$bin" -test.run '^$' -test.bench "$anchored" -test.cpu "$cpu" -test.count 1 "$@" | grep -E '^Benchmark'
		done
	done
done
