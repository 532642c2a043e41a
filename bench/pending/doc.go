// Package pending measures what a call waiting for a permit costs on each
// pipeline the library offers: goroutines and bytes (heap and stacks, after
// a GC) per pending call, with 10,000 calls queued on a full bulkhead, all
// through the public API.
//
// It is a nested module so that it can measure the pipelines of the nested
// modules (contrib/ro) next to those of the core. Run it with
//
//	cd bench/pending && go test -run '^$' -bench Pending -benchtime 3x
//
// docs/guide.md ("Which pipeline should I use") and docs/benchmarks.md
// quote its figures.
package pending
