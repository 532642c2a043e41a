package main

import (
	"errors"
	"io/fs"
	"os"
	"strings"
)

// keptMarker starts the part of docs/benchmarks.md that benchdoc does not
// write: sections measured by other commands (each quotes its own), kept as
// they are when the generated part is rewritten.
const keptMarker = "<!-- sections below are kept by benchdoc -->"

// keptSections returns the marker line and everything after it in the file
// at path, or just the marker when the file or the marker does not exist.
func keptSections(path string) (string, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "\n" + keptMarker + "\n", nil
	}
	if err != nil {
		return "", err
	}
	_, after, found := strings.Cut(string(b), keptMarker)
	if !found {
		return "\n" + keptMarker + "\n", nil
	}
	return "\n" + keptMarker + after, nil
}
