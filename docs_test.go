package bulkhead_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// Every Go code block of the docs (docs/*.md and README.md) is the body of
// an Example, test or helper function of some module, so that it compiles
// and, with an Output comment, runs: the block is preceded by
//
//	<!-- code: PATH FUNC -->
//
// and must equal the body of FUNC in PATH (relative to the repository root),
// dedented, without its Output comment. A text block preceded by
//
//	<!-- output: PATH FUNC -->
//
// must equal the Output comment of FUNC, so the output a page shows is the
// output the example is checked to print. The functions of nested modules
// are compiled by those modules' own tests; this test only keeps the text
// in sync. JSON blocks must be valid configuration files, unless preceded
// by <!-- config: error --> (must be refused) or <!-- config: skip -->:
// fileconfig/docs_test.go checks them.

var (
	goBlockRE     = regexp.MustCompile("(?m)(?:^<!-- code: (\\S+) (\\w+) -->\\n)?^```go\\n((?s:.*?))^```")
	outputBlockRE = regexp.MustCompile("(?m)^<!-- output: (\\S+) (\\w+) -->\\n```text\\n((?s:.*?))^```")
)

// docFiles returns the Markdown files whose code blocks are checked: every
// page of docs/ and the README. No page is exempt: a Go block that is not
// tied to a function is an error wherever it is (benchmarks.md, written by
// bench/cmd/benchdoc, holds command output only).
func docFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no docs/*.md found")
	}
	return append(files, "README.md")
}

// funcText returns the body of the function name in the Go file at path as
// the docs show it (dedented, up to its Output comment), and the output
// that comment expects.
func funcText(t *testing.T, path, name string) (body, output string, ok bool) {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Errorf("%v", err)
		return "", "", false
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, src, parser.SkipObjectResolution)
	if err != nil {
		t.Errorf("%v", err)
		return "", "", false
	}
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Name.Name != name || fd.Body == nil {
			continue
		}
		text := string(src[fset.Position(fd.Body.Lbrace).Offset+1 : fset.Position(fd.Body.Rbrace).Offset])
		var lines, out []string
		inOutput := false
		for line := range strings.SplitSeq(strings.TrimPrefix(text, "\n"), "\n") {
			trimmed := strings.TrimSpace(line)
			if !inOutput {
				for _, marker := range []string{"// Output:", "// Unordered output:"} {
					if rest, found := strings.CutPrefix(trimmed, marker); found {
						inOutput = true
						if rest = strings.TrimSpace(rest); rest != "" {
							out = append(out, rest)
						}
					}
				}
				if !inOutput {
					lines = append(lines, strings.TrimPrefix(line, "\t"))
				}
				continue
			}
			if c, found := strings.CutPrefix(trimmed, "//"); found {
				out = append(out, strings.TrimPrefix(c, " "))
			}
		}
		return strings.TrimRight(strings.Join(lines, "\n"), "\n \t"), strings.Join(out, "\n"), true
	}
	return "", "", false
}

func TestDocsGoBlocksAreExamples(t *testing.T) {
	for _, file := range docFiles(t) {
		text, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range goBlockRE.FindAllStringSubmatch(string(text), -1) {
			path, name, block := m[1], m[2], strings.TrimRight(m[3], "\n")
			if path == "" {
				t.Errorf("%s: a Go block is not tied to a function (<!-- code: PATH FUNC -->):\n%s", file, block)
				continue
			}
			body, _, ok := funcText(t, filepath.FromSlash(path), name)
			if !ok {
				t.Errorf("%s: %s has no function %s", file, path, name)
				continue
			}
			if body != block {
				t.Errorf("%s: the block for %s %s differs from the function body:\n--- doc\n%s\n--- %s\n%s", file, path, name, block, name, body)
			}
		}
		for _, m := range outputBlockRE.FindAllStringSubmatch(string(text), -1) {
			path, name, block := m[1], m[2], strings.TrimRight(m[3], "\n")
			_, output, ok := funcText(t, filepath.FromSlash(path), name)
			if !ok {
				t.Errorf("%s: %s has no function %s", file, path, name)
				continue
			}
			if output == "" || output != block {
				t.Errorf("%s: the output shown for %s %s differs from its Output comment:\n--- doc\n%s\n--- %s\n%s", file, path, name, block, name, output)
			}
		}
	}
}

var (
	linkRE    = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	headingRE = regexp.MustCompile(`(?m)^#{1,6} (.+)$`)
	fenceRE   = regexp.MustCompile("(?ms)^```.*?^```")
)

// anchor returns GitHub's anchor for a heading: lower case, punctuation
// dropped, spaces turned into hyphens.
func anchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// TestDocsLinksResolve checks every relative link of the docs and the
// README: the file exists and, for a link with a #fragment, the file has a
// heading with that anchor. Links to pages that were merged or renamed fail
// here.
func TestDocsLinksResolve(t *testing.T) {
	anchors := map[string]map[string]bool{}
	anchorsOf := func(path string) map[string]bool {
		if a, ok := anchors[path]; ok {
			return a
		}
		a := map[string]bool{}
		if text, err := os.ReadFile(path); err == nil {
			for _, m := range headingRE.FindAllStringSubmatch(fenceRE.ReplaceAllString(string(text), ""), -1) {
				a[anchor(m[1])] = true
			}
		}
		anchors[path] = a
		return a
	}
	for _, file := range docFiles(t) {
		text, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range linkRE.FindAllStringSubmatch(fenceRE.ReplaceAllString(string(text), ""), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			path, frag, _ := strings.Cut(target, "#")
			if path == "" {
				path = file
			} else {
				path = filepath.Join(filepath.Dir(file), filepath.FromSlash(path))
			}
			if _, err := os.Stat(path); err != nil {
				t.Errorf("%s: link %s: %v", file, target, err)
				continue
			}
			if frag != "" && strings.HasSuffix(path, ".md") && !anchorsOf(path)[frag] {
				t.Errorf("%s: link %s: %s has no heading with anchor #%s", file, target, path, frag)
			}
		}
	}
}
