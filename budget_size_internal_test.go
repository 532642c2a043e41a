package bulkhead

import (
	"testing"
	"unsafe"
)

// A waiting budget call is one record, its Acquisition embedded: 192 bytes
// on 64-bit platforms, all of the 192-byte size class since the weight and
// bypass counts are ints (BenchmarkBudgetWaiterMemory measures the heap).
// A field added to budgetWaiter moves it to the 208-byte class: it should
// say what it costs here.
func TestBudgetWaiterRecordIs192Bytes(t *testing.T) {
	if unsafe.Sizeof(uintptr(0)) != 8 {
		t.Skip("the figure is for 64-bit platforms")
	}
	if got := unsafe.Sizeof(budgetWaiter{}); got != 192 {
		t.Fatalf("unsafe.Sizeof(budgetWaiter{}) = %d, want 192", got)
	}
}
