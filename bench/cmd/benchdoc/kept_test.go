package main

import (
	"os"
	"path/filepath"
	"testing"
)

func TestKeptSectionsSurviveARewrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "benchmarks.md")
	old := "# Benchmarks\n\nold generated part\n\n" + keptMarker + "\n\n## Fleet bulkhead on Redis\n\nmeasured by hand\n"
	if err := os.WriteFile(path, []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	kept, err := keptSections(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := "\n" + keptMarker + "\n\n## Fleet bulkhead on Redis\n\nmeasured by hand\n"; kept != want {
		t.Fatalf("kept = %q, want %q", kept, want)
	}
}

func TestKeptSectionsOfANewFileIsTheMarker(t *testing.T) {
	kept, err := keptSections(filepath.Join(t.TempDir(), "missing.md"))
	if err != nil {
		t.Fatal(err)
	}
	if kept != "\n"+keptMarker+"\n" {
		t.Fatalf("kept = %q", kept)
	}
}
