// Package mdsection rewrites one "## " section of a Markdown file: the
// simulations in this module regenerate their part of docs/benchmarks.md
// with it.
package mdsection

import (
	"os"
	"strings"
)

// Replace replaces the section of the Markdown file at path that starts
// with the line heading (e.g. "## The hub budget") with body, which starts
// with that heading; a file without the section gets body appended. A
// section runs to the next "## " heading or the end of the file.
func Replace(path, heading, body string) error {
	old, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	text := string(old)
	if !strings.HasSuffix(body, "\n") {
		body += "\n"
	}
	start := strings.Index(text, "\n"+heading+"\n")
	if start < 0 {
		if !strings.HasSuffix(text, "\n") {
			text += "\n"
		}
		return os.WriteFile(path, []byte(text+"\n"+body), 0o644)
	}
	start++
	end := len(text)
	if next := strings.Index(text[start+len(heading):], "\n## "); next >= 0 {
		end = start + len(heading) + next + 1
	}
	rest := text[end:]
	if rest != "" {
		body += "\n"
	}
	return os.WriteFile(path, []byte(text[:start]+body+rest), 0o644)
}
