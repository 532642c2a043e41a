// Command benchdoc writes docs/benchmarks.md and its PNG plots from the
// output of the peer benchmarks (go test -bench in the bench module) and
// from a run of the #1592 event-loop experiment, which it performs itself.
//
// Usage (from the bench module; `make bench` does this):
//
//	go run ./cmd/benchdoc -bench bench.txt [-benchstat benchstat.txt] \
//	    -out ../docs/benchmarks.md -img ../docs/img [-eventloop-duration 3s] [-eventloop-reps 5]
package main
