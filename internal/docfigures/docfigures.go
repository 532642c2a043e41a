// Package docfigures reads the measured figures the docs state (the
// README's table of what a waiting call costs, a number in a sentence of a
// docs page), so that the tests that measure those figures the way their
// benchmarks do fail when a page and the code part.
package docfigures

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
)

// lineBreak is a line break with the spaces around it.
var lineBreak = regexp.MustCompile(`\s*\n\s*`)

// Find returns the numbers re's groups capture in its first match in the
// text of the file at path, read as a reader sees it: the lines joined by
// one space, so that a sentence wrapped across lines still matches. It
// fails, naming the file and re, if nothing matches or a group captures
// something that is not a number.
func Find(path string, re *regexp.Regexp) ([]float64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	m := re.FindStringSubmatch(lineBreak.ReplaceAllString(string(b), " "))
	if m == nil {
		return nil, fmt.Errorf("%s does not say %v", path, re)
	}
	out := make([]float64, len(m)-1)
	for i, g := range m[1:] {
		if out[i], err = strconv.ParseFloat(g, 64); err != nil {
			return nil, fmt.Errorf("%s: %v captured %q, not a number", path, re, g)
		}
	}
	return out, nil
}
