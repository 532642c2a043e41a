package testkit

import "time"

// SetAwaitQueuedBudget shortens the real-time budget of AwaitQueued outside
// a bubble, so that its failure can be tested quickly, and returns a func
// that restores it.
func SetAwaitQueuedBudget(d time.Duration) (restore func()) {
	old := awaitQueuedBudget
	awaitQueuedBudget = d
	return func() { awaitQueuedBudget = old }
}
