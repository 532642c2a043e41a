// Package peer puts every bulkhead under comparison behind one small
// interface, [Peer]: rxbulkhead's Semaphore and Pool,
// golang.org/x/sync/semaphore, failsafe-go's bulkhead, a buffered-channel
// semaphore and a hand-written goroutine pool.
package peer
