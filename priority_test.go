package bulkhead_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/rxbulkhead/bulkhead"
)

func TestPriorityClassesReadOnlyFailsafeGosFivePrioritiesAndLevels(t *testing.T) {
	m := bulkhead.DefaultPriorityClasses
	for v, want := range map[string]string{
		"0": "sheddable", "1": "sheddable", "2": "normal", "3": "critical", "4": "critical",
		"": "", "5": "", "-1": "", "+1": "", "01": "", " 3": "", "3 ": "", "x": "", "٣": "", "critical": "",
		strings.Repeat("3", 1<<20): "",
	} {
		assert.Equal(t, want, m.Class(v), "Class(%.12q)", v)
	}
	for v, want := range map[string]string{
		"0": "sheddable", "99": "sheddable", "100": "sheddable", "250": "normal", "300": "critical", "499": "critical",
		"500": "", "999": "", "0350": "", "-1": "", "": "", "1e2": "", strings.Repeat("1", 1<<20): "",
	} {
		assert.Equal(t, want, m.ClassOfLevel(v), "ClassOfLevel(%.12q)", v)
	}
	assert.Equal(t, "3", m.Value("critical"), "the lowest priority that maps to it")
	assert.Equal(t, "0", m.Value("sheddable"))
	assert.Equal(t, "2", m.Value("normal"))
	assert.Equal(t, "", m.Value("batch"), "unmapped: nothing sent")
	assert.Equal(t, "", m.Value(""))
	assert.Equal(t, "", bulkhead.PriorityClasses{}.Class("3"), "the zero map maps nothing")
	assert.Equal(t, "", bulkhead.PriorityClasses{}.Value(""), "not even the empty name")
}

func TestWithPriorityCarriesTheClassAndAnEmptyOneChangesNothing(t *testing.T) {
	ctx := context.Background()
	assert.Equal(t, "", bulkhead.PriorityFrom(ctx))
	assert.Equal(t, ctx, bulkhead.WithPriority(ctx, ""))
	c := bulkhead.WithPriority(ctx, "critical")
	assert.Equal(t, "critical", bulkhead.PriorityFrom(c))
	assert.Equal(t, "normal", bulkhead.PriorityFrom(bulkhead.WithPriority(c, "normal")), "the innermost wins")
	var noContext context.Context
	assert.PanicsWithValue(t, "bulkhead: WithPriority called with a nil context", func() {
		bulkhead.WithPriority(noContext, "critical")
	})
}

func TestCallForTakesTheClassFromTheContextAndFallsBackToThePartners(t *testing.T) {
	clk := newClock()
	b := hubBudget(t, 10, clk)
	p := mustFlow(t, b, "acme", bulkhead.PartnerOptions{})
	for ctxClass, want := range map[string]string{"critical": "critical", "": "sheddable", "nope": "sheddable"} {
		call := p.CallFor(bulkhead.WithPriority(context.Background(), ctxClass), 2)
		assert.Equal(t, want, call.Class().Name(), "context class %q", ctxClass)
		assert.Equal(t, 2, call.Weight())
	}
	assert.Panics(t, func() { p.CallFor(context.Background(), 0) })
}
