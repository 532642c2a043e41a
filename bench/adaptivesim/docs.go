package adaptivesim

import (
	"os"

	"github.com/rxbulkhead/bulkhead/bench/internal/mdsection"
)

// Heading is the section of docs/benchmarks.md that UpdateSection writes.
const Heading = "## Adaptive limits"

// UpdateSection replaces the "## Adaptive limits" section of the Markdown
// file at path with body (which starts with the heading), or appends it.
func UpdateSection(path, body string) error { return mdsection.Replace(path, Heading, body) }

func createFile(path string) (*os.File, error) { return os.Create(path) }
