// Command edihub simulates an EDI hub that posts documents over HTTP to 500
// trading partners. Each partner is an HTTP server on 127.0.0.1 (in this
// process) whose answers take a log-normal latency; after a few seconds the
// biggest partner, walmart, slows down ten-fold.
//
// The hub posts with an http.Client whose Transport is a
// bulkheadhttp.Transport over a bulkhead.Registry: one bulkhead of 20 permits
// with a bounded wait queue per partner, keyed by the AS2-To header.
// Documents are sent with Transport.Go, so a document waiting for its permit
// is a record in its partner's queue, not a goroutine. The hub keeps serving
// every other partner as before: walmart's excess documents wait and, when
// its queue is full, are rejected at once without being sent.
//
// The same traffic then runs through the library's goroutine-pool bulkhead
// (a pool.Registry: up to 20 worker goroutines per partner, each
// blocked in http.Client.Do for the length of its call) for comparison. The
// command prints a progress bar, then a table (permitted / queued / rejected
// / p50 / p99 for walmart and the healthy partners, goroutines, memory, CPU
// time of the process, and what one document waiting for its permit costs
// in goroutines and heap, measured after each run with 1000 of them waiting)
// and writes a PNG chart of latency and rejections over time. It needs no
// network beyond the loopback interface and no setup.
//
// While it runs it serves the bulkheads of each run on
// http://127.0.0.1:2112/metrics (-metrics; contrib/prometheus, one Collector
// per run under the label run: the bulkheadhttp run's Registry and the
// goroutine pool run's pool.Registry export the same metric set), and it
// ends with walmart's lines of that exposition: its rejections by reason,
// its waits, its call durations. The demo is a module of its own so that
// the core module does not depend on client_golang.
//
// A second act, month-end at the hub (monthend.go; -month-end=false skips
// it), shows a hub-wide bulkhead.Budget at work: 90 partners' interactive
// calls and, at 1 s, a burst of 600 weighted documents from 10 others share
// a hub of 200 units, once through a budget (interactive class first,
// batch class with a share) and once without (the hub's units taken in
// arrival order). It prints interactive latency before and during the
// burst, the hub's utilisation and the waits in the hub per class, writes
// a second chart (-chart's name with -month-end) and exports the budget on
// /metrics (NewBudgetCollector).
//
// Usage, from this directory (or make demo from the repository's root):
//
//	go run . [-partners 500] [-rate 2000] [-duration 6s] [-slow-after 2s] [-seed 1] [-chart $TMPDIR/edihub.png] [-pool=false] [-adaptive] [-metrics 127.0.0.1:2112] [-month-end=true] [-quiet]
package main
