package bulkhead

import (
	"testing"
	"unsafe"
)

// A waiting budget call is one record, its Acquisition embedded: 184 bytes
// on 64-bit platforms, the 192-byte size class (BenchmarkBudgetWaiterMemory
// measures the heap). A field added to budgetWaiter should say what it
// costs here.
func TestBudgetWaiterRecordIs184Bytes(t *testing.T) {
	if unsafe.Sizeof(uintptr(0)) != 8 {
		t.Skip("the figure is for 64-bit platforms")
	}
	if got := unsafe.Sizeof(budgetWaiter{}); got != 184 {
		t.Fatalf("unsafe.Sizeof(budgetWaiter{}) = %d, want 184", got)
	}
}
