package nilcheck_test

import (
	"testing"

	"github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/internal/nilcheck"
)

func TestIsTellsANilInterfaceAndATypedNilFromAValue(t *testing.T) {
	var sem *bulkhead.Semaphore
	var b bulkhead.Bulkhead = sem
	var m map[string]int
	var f func()
	real, err := bulkhead.New("p", bulkhead.Config{MaxConcurrentCalls: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		v    any
		want bool
	}{
		{"nil interface", nil, true},
		{"nil *Semaphore in a Bulkhead", b, true},
		{"nil map", m, true},
		{"nil func", f, true},
		{"a Semaphore", bulkhead.Bulkhead(real), false},
		{"a struct value", struct{}{}, false},
		{"zero int", 0, false},
	} {
		if got := nilcheck.Is(c.v); got != c.want {
			t.Errorf("%s: Is = %v, want %v", c.name, got, c.want)
		}
	}
}
