package installcheck_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rxbulkhead/bulkhead/internal/installcheck"
)

// treeRoot is the repository's root, seen from this package's directory.
const treeRoot = "../.."

// installTimeout bounds one consumer run: go get and a vet of every
// published package, on a machine whose build cache may be cold.
const installTimeout = 5 * time.Minute

func goBin(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to play a consumer: %v", err)
	}
	return p
}

func treeModules(t *testing.T) []installcheck.Module {
	t.Helper()
	mods, err := installcheck.FindModules(treeRoot)
	if err != nil {
		t.Fatal(err)
	}
	return mods
}

func TestInTreeModulesRequireEachOtherAtTheReleaseVersion(t *testing.T) {
	if err := installcheck.CheckRequirements(treeModules(t), installcheck.ReleaseVersion); err != nil {
		t.Fatal(err)
	}
}

func TestTheCoreAndEveryContribModuleArePublished(t *testing.T) {
	var published []string
	for _, m := range treeModules(t) {
		if m.Published {
			published = append(published, m.Dir)
		}
	}
	for _, want := range []string{".", "contrib/grpc", "contrib/otel", "contrib/prometheus", "contrib/redis", "contrib/ro"} {
		if !slices.Contains(published, want) {
			t.Errorf("module %s is not published (published: %v)", want, published)
		}
	}
}

var goGetLine = regexp.MustCompile(`(?m)^\s+go get (\S+)$`)

func TestReadmeInstallSectionNamesEveryPublishedModule(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join(treeRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "\n## Install\n")
	if !ok {
		t.Fatal("README.md has no \"## Install\" section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	var named []string
	for _, m := range goGetLine.FindAllStringSubmatch(section, -1) {
		named = append(named, m[1])
	}
	var published []string
	for _, m := range treeModules(t) {
		if m.Published {
			published = append(published, m.Path)
		}
	}
	slices.Sort(named)
	if !slices.Equal(named, published) {
		t.Errorf("README's install section has `go get` lines for %v; the published modules are %v", named, published)
	}
}

// TestEveryPublishedModuleInstallsFromAProxy is the check itself, over the
// working tree: publish it, then install each published module on its own
// (a user who wants contrib/redis asks for it alone) in a consumer of its own.
// The consumers are independent (a directory each; the module cache they
// share is safe for concurrent go commands, which lock what they extract), so
// they run in parallel: most of a run is the go command waiting on files and
// on its own child processes.
func TestEveryPublishedModuleInstallsFromAProxy(t *testing.T) {
	if testing.Short() {
		t.Skip("vets every published package in consumer modules")
	}
	mods := treeModules(t)
	proxy, work := t.TempDir(), t.TempDir()
	if err := installcheck.Publish(treeRoot, proxy, installcheck.ReleaseVersion, mods); err != nil {
		t.Fatal(err)
	}
	modCache := openModCache(t, "github.com/rxbulkhead")
	inTree := make(map[string]bool)
	for _, m := range mods {
		inTree[m.Path] = true
	}
	for _, m := range mods {
		if !m.Published {
			continue
		}
		t.Run(m.Dir, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(t.Context(), installTimeout)
			defer cancel()
			c, err := installcheck.Consume(ctx, goBin(t), proxy, work, modCache, installcheck.ReleaseVersion, m)
			if err != nil {
				t.Fatal(err)
			}
			// Every module of ours that the consumer needed came from the
			// proxy at the release version, none through a replace.
			out, err := c.Go(ctx, goBin(t), "list", "-m", "-f", "{{.Path}} {{.Version}}{{if .Replace}} replaced{{end}}", "all")
			if err != nil {
				t.Fatal(err)
			}
			for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
				f := strings.Fields(line)
				if len(f) == 0 || !inTree[f[0]] || f[0] == "example.com/consumer" {
					continue
				}
				if got := strings.Join(f[1:], " "); got != installcheck.ReleaseVersion {
					t.Errorf("the consumer of %s resolved %s as %q, want %s from the proxy", m.Path, f[0], got, installcheck.ReleaseVersion)
				}
			}
		})
	}
}

func openModCache(t *testing.T, prefix string) string {
	t.Helper()
	dir, release, err := installcheck.OpenModCache(prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(release)
	return dir
}

// writeTree writes files (path → content) under a new directory.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for p, content := range files {
		full := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// fakeTree is a core and one nested module, the nested one requiring the core
// at coreVersion with a replace to its directory, as this repository's
// nested modules do.
func fakeTree(t *testing.T, coreVersion string) string {
	return writeTree(t, map[string]string{
		"go.mod":      "module example.com/fakecore\n\ngo 1.26\n",
		"core.go":     "package fakecore\n\n// Limit is a value the nested module uses.\nconst Limit = 3\n",
		"sub/go.mod":  "module example.com/fakecore/sub\n\ngo 1.26\n\nrequire example.com/fakecore " + coreVersion + "\n\nreplace example.com/fakecore => ../\n",
		"sub/sub.go":  "package sub\n\nimport \"example.com/fakecore\"\n\n// Twice is twice the core's limit.\nconst Twice = 2 * fakecore.Limit\n",
		"test/go.mod": "// Not published: tests only.\nmodule example.com/fakecore/test\n\ngo 1.26\n",
		"test/t.go":   "package test\n",
	})
}

// consumeFake publishes a fake tree and installs each published module of it,
// with no upstream proxy, so that only what the tree published can resolve.
func consumeFake(t *testing.T, root string) error {
	t.Helper()
	t.Setenv("GOPROXY", "off")
	mods, err := installcheck.FindModules(root)
	if err != nil {
		t.Fatal(err)
	}
	proxy, work := t.TempDir(), t.TempDir()
	if err := installcheck.Publish(root, proxy, installcheck.ReleaseVersion, mods); err != nil {
		t.Fatal(err)
	}
	modCache := openModCache(t, "example.com/fakecore")
	for _, m := range mods {
		if m.Published {
			ctx, cancel := context.WithTimeout(t.Context(), installTimeout)
			_, err := installcheck.Consume(ctx, goBin(t), proxy, work, modCache, installcheck.ReleaseVersion, m)
			cancel()
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// The break the check exists for: a nested module that requires the core at
// a version that was never published installs in the tree (the replace) and
// nowhere else.
func TestANestedModuleRequiringAnUnpublishedCoreFailsToInstall(t *testing.T) {
	root := fakeTree(t, "v0.0.0-00010101000000-000000000000")
	mods, err := installcheck.FindModules(root)
	if err != nil {
		t.Fatal(err)
	}
	if err := installcheck.CheckRequirements(mods, installcheck.ReleaseVersion); err == nil || !strings.Contains(err.Error(), "sub/go.mod requires example.com/fakecore v0.0.0-00010101000000-000000000000") {
		t.Errorf("CheckRequirements = %v, want it to name sub/go.mod and the version", err)
	}
	err = consumeFake(t, root)
	if err == nil || !strings.Contains(err.Error(), "example.com/fakecore@v0.0.0-00010101000000-000000000000") {
		t.Fatalf("installing the fake tree = %v, want go get to fail on the unpublished core version", err)
	}
}

func TestANestedModuleRequiringTheReleasedCoreInstalls(t *testing.T) {
	root := fakeTree(t, installcheck.ReleaseVersion)
	mods, err := installcheck.FindModules(root)
	if err != nil {
		t.Fatal(err)
	}
	if err := installcheck.CheckRequirements(mods, installcheck.ReleaseVersion); err != nil {
		t.Fatal(err)
	}
	for _, m := range mods {
		if (m.Dir == "test") == m.Published {
			t.Errorf("module %s: Published = %v; only the one marked \"Not published\" should be unpublished", m.Dir, m.Published)
		}
	}
	if err := consumeFake(t, root); err != nil {
		t.Fatal(err)
	}
}

// The consumer vets instead of building: a published package that does not
// compile (here a nested module using a core identifier that does not exist)
// must still fail the check, naming the package and the error.
func TestAPublishedPackageThatDoesNotCompileFailsToInstall(t *testing.T) {
	root := fakeTree(t, installcheck.ReleaseVersion)
	broken := "package broken\n\nimport \"example.com/fakecore\"\n\n// Limit is a core constant that was never published.\nconst Limit = fakecore.Missing\n"
	if err := os.MkdirAll(filepath.Join(root, "sub", "broken"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "sub", "broken", "broken.go"), []byte(broken), 0o644); err != nil {
		t.Fatal(err)
	}
	err := consumeFake(t, root)
	if err == nil || !strings.Contains(err.Error(), "example.com/fakecore/sub/broken") || !strings.Contains(err.Error(), "undefined: fakecore.Missing") {
		t.Fatalf("installing a tree whose sub/broken does not compile = %v, want the check to fail naming the package and undefined: fakecore.Missing", err)
	}
}

func TestCheckRequirementsWantsTheReplaceThatBuildsTheTree(t *testing.T) {
	root := writeTree(t, map[string]string{
		"go.mod":     "module example.com/fakecore\n\ngo 1.26\n",
		"sub/go.mod": "module example.com/fakecore/sub\n\ngo 1.26\n\nrequire example.com/fakecore " + installcheck.ReleaseVersion + "\n",
	})
	mods, err := installcheck.FindModules(root)
	if err != nil {
		t.Fatal(err)
	}
	err = installcheck.CheckRequirements(mods, installcheck.ReleaseVersion)
	if err == nil || !strings.Contains(err.Error(), "without `replace example.com/fakecore => ..`") {
		t.Errorf("CheckRequirements = %v, want it to ask for the replace to ..", err)
	}
}
