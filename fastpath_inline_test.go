package bulkhead

import (
	"os/exec"
	"regexp"
	"testing"
)

// The fast paths are inlined at their callers (see takeOr in
// semaphore.go): a change that pushes one of them over the compiler's
// inlining budget (80) costs every call a call frame again, which no test
// of behaviour sees. This one builds the package with -gcflags=-m and
// fails if the compiler no longer says it can inline them.
func TestFastPathsInline(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the package with the go command")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	out, err := exec.Command(goBin, "build", "-gcflags=-m", "-o", "/dev/null", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build -gcflags=-m: %v\n%s", err, out)
	}
	for _, fn := range []string{
		"(*Semaphore).TryAcquirePermission",
		"(*Semaphore).AcquirePermissionAsync",
		"(*Semaphore).ReleasePermission",
		"(*Semaphore).FinishCall",
		"(*Acquisition).OnDone",
	} {
		if !regexp.MustCompile(`(?m)^\./\w+\.go:\d+:\d+: can inline ` + regexp.QuoteMeta(fn) + `$`).Match(out) {
			t.Errorf("the compiler no longer inlines %s (go build -gcflags=-m=2 . says why)", fn)
		}
	}
}
