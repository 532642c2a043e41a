// Package lockhold measures how long a Semaphore holds its lock, for the
// scale benchmark (bench/scale_test.go). It is compiled in only with the
// build tag bulkheadlockhold, on Linux (the CPU-time figure reads the
// thread's CPU clock); otherwise On is false and every function is
// an empty one the compiler inlines away, so the core pays nothing.
//
// With the tag, Acquired and Released keep one start time for the whole
// process: they are correct for one Semaphore whose lock is the only one
// measured, which is what the benchmark runs.
package lockhold
