package bulkhead

import "context"

// priorityKey is the context key of WithPriority.
type priorityKey struct{}

// WithPriority returns a copy of ctx that carries class, the name of a
// budget class (BudgetConfig.Classes), for the calls made with it: the
// HTTP transport and middleware (bulkheadhttp), the gRPC interceptors
// (contrib/grpc) and BudgetPartner.CallFor take the class of their call
// from it, and the client side propagates it to the next hop in
// failsafe-go's header (PriorityHeader, PriorityMetadataKey). An empty
// class returns ctx as it is. It panics if ctx is nil.
func WithPriority(ctx context.Context, class string) context.Context {
	if ctx == nil {
		panic("bulkhead: WithPriority called with a nil context")
	}
	if class == "" {
		return ctx
	}
	return context.WithValue(ctx, priorityKey{}, class)
}

// PriorityFrom returns the class name ctx carries (WithPriority), or "".
func PriorityFrom(ctx context.Context) string {
	if ctx == nil {
		return ""
	}
	class, _ := ctx.Value(priorityKey{}).(string)
	return class
}

// PriorityHeader is the HTTP header in which failsafe-go (failsafehttp)
// sends an execution's priority to the next hop: a decimal number from 0
// (very low) to 4 (very high). bulkheadhttp reads and writes it, so that a
// fleet mixing rxbulkhead and failsafe-go services agrees on priorities.
const PriorityHeader = "X-Failsafe-Priority"

// PriorityMetadataKey is the gRPC metadata key of PriorityHeader
// (failsafegrpc's), read and written by contrib/grpc.
const PriorityMetadataKey = "x-failsafe-priority"

// LevelHeader and LevelMetadataKey carry failsafe-go's finer "level" (0 to
// 499; the priority is level/100). A hop that sends a level and no
// priority is read by its level.
const (
	LevelHeader      = "X-Failsafe-Level"
	LevelMetadataKey = "x-failsafe-level"
)

// PriorityClasses maps failsafe-go's five priorities to the names of a
// budget's classes: index 0 is failsafe-go's VeryLow, 1 Low, 2 Medium, 3
// High, 4 VeryHigh. An empty name leaves that priority unmapped.
type PriorityClasses [5]string

// DefaultPriorityClasses maps the five priorities to the classes the
// documentation uses: VeryLow and Low to "sheddable", Medium to "normal",
// High and VeryHigh to "critical".
var DefaultPriorityClasses = PriorityClasses{"sheddable", "sheddable", "normal", "critical", "critical"}

// Class returns the class name of a priority as sent on the wire (value:
// one decimal digit 0 to 4), or "" for anything else: an empty, longer,
// signed, non-decimal or out-of-range value, or an unmapped priority. It
// reads at most one byte of value and allocates nothing, so a hostile
// header costs nothing and creates nothing; a class name the budget does
// not have falls back to the partner's class (CallOptions.Class).
func (m PriorityClasses) Class(value string) string {
	if len(value) != 1 || value[0] < '0' || value[0] > '4' {
		return ""
	}
	return m[value[0]-'0']
}

// ClassOfLevel is Class for failsafe-go's level (LevelHeader): a decimal
// number from 0 to 499 of at most three digits, whose priority is
// level/100. Anything else is "".
func (m PriorityClasses) ClassOfLevel(value string) string {
	if len(value) == 0 || len(value) > 3 {
		return ""
	}
	n := 0
	for i := 0; i < len(value); i++ {
		c := value[i]
		if c < '0' || c > '9' {
			return ""
		}
		n = n*10 + int(c-'0')
	}
	if n > 499 {
		return ""
	}
	return m[n/100]
}

// Value returns the priority to send for class (the lowest priority that
// maps to it), as its wire value "0" to "4", or "" if no priority maps to
// class (then nothing is sent).
func (m PriorityClasses) Value(class string) string {
	if class == "" {
		return ""
	}
	for i, name := range m {
		if name == class {
			return priorityValues[i]
		}
	}
	return ""
}

var priorityValues = [5]string{"0", "1", "2", "3", "4"}

// CallFor returns the BudgetCall of p's call of weight permits whose class
// ctx carries (WithPriority): a class the budget does not have, or none,
// is p's class. It is for the reactive operators, which take a Bulkhead:
// pass them partner.CallFor(ctx, 1). It panics as Call does.
func (p *BudgetPartner) CallFor(ctx context.Context, weight int) BudgetCall {
	c := p.class
	if name := PriorityFrom(ctx); name != "" {
		if x := p.b.classNamed(name); x != nil {
			c = x
		}
	}
	if weight < 1 {
		panic("bulkhead: BudgetPartner.CallFor: weight must be >= 1")
	}
	return BudgetCall{p: p, c: c, k: weight}
}
