// Command edihub simulates an EDI hub that sends documents to 500 trading
// partners, each behind its own bulkhead of 20 permits with a bounded wait
// queue, taken from a bulkhead.Registry. After a few seconds the biggest
// partner, walmart, slows down ten-fold. The hub keeps serving every other
// partner as before: walmart's excess documents wait as small records in its
// queue and, when the queue is full, are rejected at once.
//
// The same traffic then runs through the library's goroutine-pool bulkhead
// (a bulkhead.PoolRegistry: up to 20 worker goroutines per partner, each
// blocked for the length of its call) for comparison. The command prints a progress bar,
// then a table (permitted / queued / rejected / p50 / p99 for walmart and the
// healthy partners, goroutines, memory, CPU time) and writes a PNG chart of
// latency and rejections over time.
//
// Usage:
//
//	go run ./examples/edihub [-partners 500] [-duration 6s] [-slow-after 2s] [-seed 1] [-chart $TMPDIR/edihub.png] [-pool=false] [-quiet]
package main
