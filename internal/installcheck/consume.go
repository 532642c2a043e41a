package installcheck

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

// Consumer is a throwaway module outside the tree that installs one
// published module as a user does.
type Consumer struct {
	Dir string   // the consumer module's directory (created by Consume)
	Env []string // the environment its go commands run with
}

// Consume creates a module under workDir and, with the go command pointed at
// proxyDir first (GOWORK=off, so no go.work of the tree can help), runs
// `go get PATH@version` for m alone, as a user who wants only that module
// does, and writes a program that imports every package of m that a user can
// import (neither internal nor a command), then vets the program and those
// packages, which type-checks them, their tests and their Examples against
// what the consumer resolved (vet, not build: the same compile errors fail
// it, without the link).
// goBin is the go command to run. It returns the consumer, for further
// checks, and the first command that failed, with its output.
//
// Third-party modules come from this machine's module cache when they are
// there (its download directory is itself a module proxy), then from the go
// command's own GOPROXY. The consumers' module cache is modCache, one that
// only consumers use (see [OpenModCache]): stable across runs, so that the
// build cache serves the third-party packages compiled by an earlier run.
func Consume(ctx context.Context, goBin, proxyDir, workDir, modCache, version string, m Module) (*Consumer, error) {
	if !m.Published {
		return nil, fmt.Errorf("installcheck: %s is not published", m.Path)
	}
	c := &Consumer{Dir: filepath.Join(workDir, "consumer-"+strings.ReplaceAll(m.Dir, "/", "-"))}
	if err := os.MkdirAll(c.Dir, 0o755); err != nil {
		return nil, err
	}
	upstream, err := goEnv(ctx, goBin, "GOPROXY")
	if err != nil {
		return nil, err
	}
	cache, err := goEnv(ctx, goBin, "GOMODCACHE")
	if err != nil {
		return nil, err
	}
	proxies := []string{fileURL(proxyDir)}
	if cache != "" {
		proxies = append(proxies, fileURL(filepath.Join(cache, "cache", "download")))
	}
	if upstream != "" && upstream != "off" {
		proxies = append(proxies, upstream)
	}
	c.Env = append(os.Environ(),
		"GOWORK=off",
		"GOFLAGS=-mod=mod -modcacherw",
		"GOPROXY="+strings.Join(proxies, ","),
		"GOMODCACHE="+modCache,
		// The third-party modules were verified when this machine first
		// downloaded them; what is checked here is that ours resolve.
		"GOSUMDB=off",
		"GOTOOLCHAIN=local",
		// The go command indexes the packages of the module cache in its
		// build cache, keyed by module and version, because a published
		// version never changes. Ours changes from run to run at the same
		// version, so the index would serve the file lists of an earlier tree.
		"GODEBUG=goindex=0",
	)
	if err := os.WriteFile(filepath.Join(c.Dir, "go.mod"), []byte("module example.com/consumer\n\ngo 1.26\n"), 0o644); err != nil {
		return nil, err
	}
	if _, err := c.Go(ctx, goBin, "get", m.Path+"@"+version); err != nil {
		return c, err
	}
	pkgs, err := c.importablePackages(ctx, goBin, m.Path)
	if err != nil {
		return c, err
	}
	var src strings.Builder
	src.WriteString("// Command consumer imports every package a user can import.\npackage main\n\nimport (\n")
	for _, p := range pkgs {
		fmt.Fprintf(&src, "\t_ %q\n", p)
	}
	src.WriteString(")\n\nfunc main() {}\n")
	if err := os.WriteFile(filepath.Join(c.Dir, "main.go"), []byte(src.String()), 0o644); err != nil {
		return c, err
	}
	// go vet type-checks the program and every package with its tests and
	// Examples (a package that does not compile fails it as it fails go
	// build: TestAPublishedPackageThatDoesNotCompileFailsToInstall) without
	// linking a binary, which made up about half the check's time.
	if _, err := c.Go(ctx, goBin, append([]string{"vet", "."}, pkgs...)...); err != nil {
		return c, err
	}
	return c, nil
}

// Go runs the go command in the consumer's directory and returns its
// standard output; an error carries the command and everything it printed.
func (c *Consumer) Go(ctx context.Context, goBin string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, goBin, args...)
	cmd.Dir = c.Dir
	cmd.Env = c.Env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("go %s: %w\n%s%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String(), nil
}

// importablePackages lists the packages of module, as the consumer resolved
// it, that another module may import. The pattern PATH/... in a consumer
// also matches packages of other modules whose paths lie below PATH (the
// core's pattern matches contrib/redis's packages when both are in the build
// list); those are left to their own consumer.
func (c *Consumer) importablePackages(ctx context.Context, goBin, module string) ([]string, error) {
	// -find: the names are all that is read here, and resolving every
	// package's imports took most of the list's time (the vet that
	// follows type-checks them all).
	out, err := c.Go(ctx, goBin, "list", "-find", "-f", "{{.ImportPath}} {{.Name}} {{.Module.Path}}", module+"/...")
	if err != nil {
		return nil, err
	}
	seen := make(map[string]bool)
	var pkgs []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 || f[2] != module {
			continue
		}
		path, name := f[0], f[1]
		if name == "main" || isInternal(path) || seen[path] {
			continue
		}
		seen[path] = true
		pkgs = append(pkgs, path)
	}
	if len(pkgs) == 0 {
		return nil, fmt.Errorf("installcheck: no importable package in %s", module)
	}
	sort.Strings(pkgs)
	return pkgs, nil
}

func isInternal(path string) bool {
	for _, elem := range strings.Split(path, "/") {
		if elem == "internal" {
			return true
		}
	}
	return false
}

func goEnv(ctx context.Context, goBin, name string) (string, error) {
	out, err := exec.CommandContext(ctx, goBin, "env", name).Output()
	if err != nil {
		return "", fmt.Errorf("go env %s: %w", name, err)
	}
	return strings.TrimSpace(string(out)), nil
}

func fileURL(dir string) string {
	return "file://" + filepath.ToSlash(dir)
}
