package peer_test

import (
	"context"
	"fmt"

	"github.com/rxbulkhead/bulkhead/bench/peer"
)

// Every peer is driven through the same interface.
func ExampleAll() {
	for _, f := range peer.All() {
		p := f.New(1)
		first, second := p.TryAcquire(), p.TryAcquire()
		p.Release()
		if err := p.Acquire(context.Background()); err == nil {
			p.Release()
		}
		if c, ok := p.(interface{ Close() }); ok {
			c.Close()
		}
		fmt.Printf("%s: %v %v\n", p.Name(), first, second)
	}
	// Output:
	// rxbulkhead: true false
	// rxbulkhead-pool: true false
	// xsync: true false
	// failsafe: true false
	// chan: true false
	// pool: true false
}
