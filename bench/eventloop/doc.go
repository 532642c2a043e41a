// Package eventloop reproduces, in Go, the experiment of resilience4j issue
// #1592: what a saturated bulkhead costs the *other* partners when permits
// are taken on event-loop goroutines.
//
// A small event-loop runtime runs K loops (K = GOMAXPROCS), each a goroutine
// draining its own task queue. Clients are closed-loop, as in a load test at
// saturation: each sends a request, waits for the answer (or the rejection)
// and sends the next one at once. A request costs CPU on its loop, takes a
// permit of its partner's bulkhead, and makes a non-blocking call whose
// completion is scheduled by a timer and posted back to the loop, which
// releases the permit. One partner then slows down ten-fold and saturates its
// bulkhead. [Run] measures the completed calls per second of the healthy
// partners under three ways of taking the permit ([Mode]): blocking on the
// loop, fail-fast, and rxbulkhead's asynchronous acquisition.
package eventloop
