package bulkhead_test

import "runtime"

func stackDepth() int {
	pc := make([]uintptr, 4096)
	return runtime.Callers(0, pc)
}
