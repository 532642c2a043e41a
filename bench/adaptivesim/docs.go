package adaptivesim

import (
	"os"
	"strings"
)

// Heading is the section of docs/benchmarks.md that UpdateSection writes.
const Heading = "## Adaptive limits"

// UpdateSection replaces the "## Adaptive limits" section of the Markdown
// file at path with body (which starts with the heading), or appends it;
// the section runs to the next "## " heading or the end of the file.
func UpdateSection(path, body string) error {
	old, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	text := string(old)
	if !strings.HasSuffix(body, "\n") {
		body += "\n"
	}
	start := strings.Index(text, "\n"+Heading+"\n")
	if start < 0 {
		if !strings.HasSuffix(text, "\n") {
			text += "\n"
		}
		return os.WriteFile(path, []byte(text+"\n"+body), 0o644)
	}
	start++
	end := len(text)
	if next := strings.Index(text[start+len(Heading):], "\n## "); next >= 0 {
		end = start + len(Heading) + next + 1
	}
	rest := text[end:]
	if rest != "" {
		body += "\n"
	}
	return os.WriteFile(path, []byte(text[:start]+body+rest), 0o644)
}

func createFile(path string) (*os.File, error) { return os.Create(path) }
