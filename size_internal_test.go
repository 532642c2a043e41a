package bulkhead

import (
	"testing"
	"unsafe"
)

// The layout comment on Acquisition (no flags of its own, the cell's flag
// in the padding after its lock) keeps a queued Acquisition in the 96-byte
// size class; BenchmarkQueuedAcquisitionMemory measures the heap cost.
func TestAcquisitionRecordIs96Bytes(t *testing.T) {
	if unsafe.Sizeof(uintptr(0)) != 8 {
		t.Skip("the figure is for 64-bit platforms")
	}
	if got := unsafe.Sizeof(Acquisition{}); got != 96 {
		t.Fatalf("unsafe.Sizeof(Acquisition{}) = %d, want 96", got)
	}
}
