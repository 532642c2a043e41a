//go:build !unix

package bulkhead_test

import "time"

// processCPU is not measured here: benchmarks report 0 cpu-ns/op.
func processCPU() time.Duration { return 0 }
