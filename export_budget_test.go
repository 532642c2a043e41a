package bulkhead

// SetBudgetDecidedHook makes b call f with each queued call's Acquisition,
// on the deciding goroutine, in the order the calls were decided (before
// their callbacks, which may run on several goroutines in any order). It
// must be called before b is used.
func SetBudgetDecidedHook(b *Budget, f func(*Acquisition)) { b.decidedHook = f }
