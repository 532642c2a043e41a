package bulkhead

import (
	"testing"
	"unsafe"
)

// stackAddr returns an address in the caller's stack frame's callee, so
// that two calls at different depths of one goroutine tell how much stack
// lies between them.
//
//go:noinline
func stackAddr() uintptr {
	var b [1]byte
	return uintptr(unsafe.Pointer(&b))
}

// growStack sizes a chain's stack at chainStack (maxInlineDeliveries
// levels of chainLevel bytes): a level of nested delivery (release,
// delivery and callback frames) must fit in chainLevel, or the chain's
// goroutines grow their stacks level by level again.
func TestANestedDeliveryLevelFitsInChainStack(t *testing.T) {
	s, err := New("levels", Config{MaxConcurrentCalls: 1, MaxWaitDuration: NoTimeout, MaxQueuedCalls: Unbounded})
	if err != nil {
		t.Fatal(err)
	}
	s.TryAcquirePermission()
	const n = 8
	var addrs []uintptr
	for range n {
		s.AcquirePermissionAsync().OnDone(func(error) {
			addrs = append(addrs, stackAddr())
			s.FinishCall()
		})
	}
	// On a goroutine whose stack already holds the chain, so that it does
	// not move while the levels are measured.
	done := make(chan struct{})
	go func() {
		defer close(done)
		growStack(0)
		s.FinishCall()
	}()
	<-done
	level := addrs[0] - addrs[1]
	for i := 2; i < len(addrs); i++ {
		if d := addrs[i-1] - addrs[i]; d != level {
			t.Fatalf("levels %d and %d of nested delivery take %d and %d bytes of stack (did the stack move?)", i-1, i, level, d)
		}
	}
	if level > chainLevel {
		t.Fatalf("a level of nested delivery takes %d bytes of stack; chainLevel allows %d", level, chainLevel)
	}
	t.Logf("a level of nested delivery takes %d bytes of stack", level)
}

// inlineCount's bounds: maxInlineDeliveries per generation, a new
// generation counting afresh (its first delivery told to yield while older
// ones are in progress), leaves of an older generation not touching the
// current count, and maxInlineTotal over every generation, which no new
// generation lifts.
func TestInlineCountBoundsEachGenerationAndTheTotal(t *testing.T) {
	var c inlineCount
	var gens []uint64 // of the deliveries entered, in order
	enter := func() (ok, full, yield bool) {
		gen, ok, full, yield := c.enter()
		if ok {
			gens = append(gens, gen)
		}
		return ok, full, yield
	}
	for i := range maxInlineDeliveries {
		if ok, _, yield := enter(); !ok || yield {
			t.Fatalf("delivery %d of generation 0: ok %v, yield %v; want ok, no yield", i+1, ok, yield)
		}
	}
	ok, full, _ := enter()
	if ok || !full {
		t.Fatalf("delivery %d of generation 0: ok %v, full %v; want refused, full", maxInlineDeliveries+1, ok, full)
	}
	c.newGeneration(gens[0])
	c.newGeneration(gens[0]) // a second goroutine that found it full: no-op
	if ok, _, yield := enter(); !ok || !yield {
		t.Fatalf("first delivery of generation 1: ok %v, yield %v; want ok, yield (generation 0 is in progress)", ok, yield)
	}
	if g := gens[len(gens)-1]; g != gens[0]+1 {
		t.Fatalf("generation %d after one newGeneration from %d", g, gens[0])
	}
	// Generation 0 unwinds: generation 1's count stays 1.
	for _, g := range gens[:maxInlineDeliveries] {
		c.leave(g)
	}
	gens = gens[maxInlineDeliveries:]
	for i := 1; i < maxInlineDeliveries; i++ {
		if ok, _, _ := enter(); !ok {
			t.Fatalf("delivery %d of generation 1 refused after generation 0 left", i+1)
		}
	}
	if ok, _, _ := enter(); ok {
		t.Fatal("generation 1 took more than maxInlineDeliveries")
	}
	// Generations that never unwind stop at maxInlineTotal.
	for len(gens) < maxInlineTotal {
		ok, full, _ := enter()
		if !ok {
			if !full {
				t.Fatalf("refused below maxInlineTotal (%d in progress) without a full generation", len(gens))
			}
			c.newGeneration(gens[len(gens)-1])
		}
	}
	c.newGeneration(gens[len(gens)-1])
	if ok, full, _ := enter(); ok || full {
		t.Fatalf("%d deliveries in progress and a fresh generation: ok %v, full %v; want refused, not full", len(gens), ok, full)
	}
	for _, g := range gens {
		c.leave(g)
	}
	if v := c.word.Load(); v&inlineMask != 0 || v>>20&inlineMask != 0 {
		t.Fatalf("counts left after every delivery left: %#x", v)
	}
}
