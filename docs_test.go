package bulkhead_test

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/rxbulkhead/bulkhead"
)

// Every Go code block of the docs (docs/*.md and README.md) is the body of
// an Example, test or helper function of some module, so that it compiles
// and, with an Output comment, runs: the block is preceded by
//
//	<!-- code: PATH FUNC -->
//
// and must equal the body of FUNC in PATH (relative to the repository root),
// dedented, without its Output comment. The functions of nested modules are
// compiled by those modules' own tests; this test only keeps the text in
// sync. JSON blocks must be valid registry configs, unless preceded by
// <!-- config: error --> (must be refused) or <!-- config: skip -->.

var (
	goBlockRE   = regexp.MustCompile("(?m)(?:^<!-- code: (\\S+) (\\w+) -->\\n)?^```go\\n((?s:.*?))^```")
	jsonBlockRE = regexp.MustCompile("(?m)(?:^<!-- config: (\\w+) -->\\n)?^```json\\n((?s:.*?))^```")
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

// funcBody returns the body of the function name in the Go file at path as
// the docs show it.
func funcBody(t *testing.T, path, name string) (string, bool) {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Errorf("%v", err)
		return "", false
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, src, parser.SkipObjectResolution)
	if err != nil {
		t.Errorf("%v", err)
		return "", false
	}
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Name.Name != name || fd.Body == nil {
			continue
		}
		body := string(src[fset.Position(fd.Body.Lbrace).Offset+1 : fset.Position(fd.Body.Rbrace).Offset])
		var lines []string
		for line := range strings.SplitSeq(strings.TrimPrefix(body, "\n"), "\n") {
			trimmed := strings.TrimSpace(line)
			if strings.HasPrefix(trimmed, "// Output:") || strings.HasPrefix(trimmed, "// Unordered output:") {
				break
			}
			lines = append(lines, strings.TrimPrefix(line, "\t"))
		}
		return strings.TrimRight(strings.Join(lines, "\n"), "\n \t"), true
	}
	return "", false
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
			body, ok := funcBody(t, filepath.FromSlash(path), name)
			if !ok {
				t.Errorf("%s: %s has no function %s", file, path, name)
				continue
			}
			if body != block {
				t.Errorf("%s: the block for %s %s differs from the function body:\n--- doc\n%s\n--- %s\n%s", file, path, name, block, name, body)
			}
		}
	}
}

func TestDocsJSONBlocksAreValidConfigs(t *testing.T) {
	for _, file := range docFiles(t) {
		text, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range jsonBlockRE.FindAllStringSubmatch(string(text), -1) {
			mode, block := m[1], m[2]
			if mode == "skip" {
				continue
			}
			var rc bulkhead.RegistryConfig
			err := json.Unmarshal([]byte(block), &rc)
			if err == nil {
				_, err = rc.Resolve()
			}
			switch {
			case mode == "error" && err == nil:
				t.Errorf("%s: this block should be refused but is valid:\n%s", file, block)
			case mode != "error" && err != nil:
				t.Errorf("%s: %v\n%s", file, err, block)
			}
		}
	}
}
