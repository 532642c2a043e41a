//go:build race

package bulkhead

// chainLevel is about the stack one level of nested delivery takes
// (release, delivery and callback frames; see chainStack): more with the
// race detector's instrumentation (1048 bytes measured once release and
// deliverFinished carry the call's CallStart).
const chainLevel = 1280
