package docfigures

import (
	"regexp"
	"strings"
	"testing"
)

func TestFindReadsTheNumbersOfASentenceWrappedAcrossLines(t *testing.T) {
	path := write(t, "# Design\n\nA pending subscription holds its\n  closure: 304 B and 0\ngoroutines, measured.\n")
	got, err := Find(path, regexp.MustCompile(`closure: (\d+) B and (\d+) goroutines`))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0] != 304 || got[1] != 0 {
		t.Fatalf("Find = %v, want [304 0]", got)
	}
}

func TestFindFailsNamingTheFileAndWhatItLookedFor(t *testing.T) {
	path := write(t, "closure: many B and 0 goroutines\n")
	_, err := Find(path, regexp.MustCompile(`closure: (\d+) B`))
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), `closure: (\d+) B`) {
		t.Fatalf("err %v, want one naming %s and the pattern", err, path)
	}
	_, err = Find(path, regexp.MustCompile(`closure: (\w+) B`))
	if err == nil || !strings.Contains(err.Error(), `"many"`) {
		t.Fatalf("err %v, want one naming what was captured", err)
	}
}
