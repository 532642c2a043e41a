package prometheus_test

// The tests in this file read the constructors' promises on nil arguments
// as a hostile caller would. The constructors return no error, so a nil
// option is a programming error they panic on, as client_golang's Must
// functions do; contrib/otel's Start, which returns an error, fails
// instead. Either way the message names the faulty argument by its index.

import (
	"fmt"
	"testing"
	"time"

	"github.com/rxbulkhead/bulkhead"
	bulkheadprom "github.com/rxbulkhead/bulkhead/contrib/prometheus"
	"github.com/rxbulkhead/bulkhead/testkit"
)

// Promise (NewCollector, NewBudgetCollector): "It panics if ... an option
// is nil", naming the option by its index in opts; WithSources panics
// naming the nil source by its index in srcs.
func TestHostileNilOptionOrSourcePanicsNamingItsIndex(t *testing.T) {
	r := newRegistry(t, bulkhead.Config{MaxConcurrentCalls: 1})
	b := newHubBudget(t, "hub", testkit.NewVirtualClock(time.Unix(0, 0)))
	for _, tc := range []struct {
		name string
		call func()
		want string
	}{
		{"NewCollector", func() { bulkheadprom.NewCollector(r, bulkheadprom.WithResilience4jNames(), nil) },
			"bulkhead/contrib/prometheus: NewCollector called with a nil Option at index 1"},
		{"NewBudgetCollector", func() { bulkheadprom.NewBudgetCollector([]*bulkhead.Budget{b}, nil) },
			"bulkhead/contrib/prometheus: NewBudgetCollector called with a nil Option at index 0"},
		{"WithSources", func() { bulkheadprom.NewCollector(r, bulkheadprom.WithSources(r, nil)) },
			"bulkhead/contrib/prometheus: WithSources called with a nil bulkhead.MetricsSource at index 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if got := fmt.Sprint(recover()); got != tc.want {
					t.Errorf("recovered %q, want %q", got, tc.want)
				}
			}()
			tc.call()
		})
	}
}
