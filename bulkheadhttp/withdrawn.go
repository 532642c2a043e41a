package bulkheadhttp

import (
	"fmt"

	"github.com/rxbulkhead/bulkhead"
)

// WithdrawnError is the rejection NewMiddleware answers, and gives to the
// WithRejectHandler handler, for a request whose context ended before its
// bulkhead granted a permit: it left the queue (or never entered it), holds
// no permit, and the wrapped handler did not run. It matches
// bulkhead.ErrCancelled and the context's error (context.Canceled or
// context.DeadlineExceeded).
type WithdrawnError struct {
	Name string // the request's key: its bulkhead's name, unless it waited in the catch-all
	Err  error  // the context's error
}

// Error names the bulkhead and the context's error.
func (e *WithdrawnError) Error() string {
	return fmt.Sprintf("bulkheadhttp: bulkhead %q: request withdrawn while waiting for a permit: %v", e.Name, e.Err)
}

// Unwrap returns bulkhead.ErrCancelled and the context's error, for
// errors.Is.
func (e *WithdrawnError) Unwrap() []error { return []error{bulkhead.ErrCancelled, e.Err} }
