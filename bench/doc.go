// Package bench holds the comparisons of rxbulkhead with the Go primitives
// people use as bulkheads today. It is a nested module so that the core
// module depends on nothing but rxgo.
//
// The benchmarks are in bench_test.go (peers side by side, one run), the
// #1592 event-loop experiment in package eventloop, and cmd/benchdoc turns
// their output into docs/benchmarks.md with plots.
package bench
