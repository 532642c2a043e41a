//go:build !race

package bulkhead

// chainLevel is about the stack one level of nested delivery takes
// (release, delivery and callback frames; see chainStack).
const chainLevel = 768
