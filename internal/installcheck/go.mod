// Not published: the check that every published module of this repository
// installs the way a user installs it (see doc.go).
module github.com/rxbulkhead/bulkhead/internal/installcheck

go 1.26.0

require (
	go.uber.org/goleak v1.3.0
	golang.org/x/mod v0.43.0
)
