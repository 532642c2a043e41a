package bulkhead

import (
	"testing"
	"unsafe"
)

// A queued waiter of weight k > 1 is its Acquisition (96 bytes, as a
// waiter of weight 1) and a weightedOwner of 16 bytes: 112 bytes in all.
func TestWeightedOwnerIs16Bytes(t *testing.T) {
	if unsafe.Sizeof(uintptr(0)) != 8 {
		t.Skip("the figure is for 64-bit platforms")
	}
	if got := unsafe.Sizeof(weightedOwner{}); got != 16 {
		t.Fatalf("unsafe.Sizeof(weightedOwner{}) = %d, want 16", got)
	}
}
