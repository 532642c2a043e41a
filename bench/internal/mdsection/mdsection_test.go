package mdsection

import (
	"os"
	"path/filepath"
	"testing"
)

func TestReplaceRewritesOnlyItsSectionAndAppendsAMissingOne(t *testing.T) {
	path := filepath.Join(t.TempDir(), "b.md")
	const before = "# Title\n\n## A\n\nold a\n\n## B\n\nold b\n"
	if err := os.WriteFile(path, []byte(before), 0o644); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		heading, body, want string
	}{
		{"## A", "## A\n\nnew a", "# Title\n\n## A\n\nnew a\n\n## B\n\nold b\n"},
		{"## B", "## B\n\nnew b\n", "# Title\n\n## A\n\nnew a\n\n## B\n\nnew b\n"},
		{"## C", "## C\n\nc", "# Title\n\n## A\n\nnew a\n\n## B\n\nnew b\n\n## C\n\nc\n"},
	}
	for _, s := range steps {
		if err := Replace(path, s.heading, s.body); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != s.want {
			t.Fatalf("after replacing %q:\n%q\nwant\n%q", s.heading, got, s.want)
		}
	}
	if err := Replace(filepath.Join(t.TempDir(), "missing.md"), "## A", "## A\n"); err == nil {
		t.Fatal("Replace of a missing file: nil error")
	}
}
