//go:build race

package bulkhead

// chainLevel is about the stack one level of nested delivery takes
// (release, delivery and callback frames; see chainStack): more with the
// race detector's instrumentation.
const chainLevel = 1024
