package installcheck

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// OpenModCache returns the module cache the consumers use, a directory of
// this user's cache that nothing else uses, and a function that releases it.
// It holds an exclusive lock on that cache until released, so two checks on
// one machine (two worktrees' `make test`) take turns, and it removes every
// module of prefix (this repository's modules) from it first, so that a
// module published by an earlier run, at the same version but from another
// tree, is never served: only what this run publishes resolves.
//
// The cache is stable across runs on purpose: the build cache keys compiled
// packages by their directory, so a fresh cache would make every run compile
// every third-party package again.
func OpenModCache(prefix string) (dir string, release func(), err error) {
	base, err := os.UserCacheDir()
	if err != nil {
		return "", nil, err
	}
	dir = filepath.Join(base, "rxbulkhead-installcheck", "modcache")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", nil, err
	}
	lock, err := os.OpenFile(filepath.Join(filepath.Dir(dir), "lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", nil, err
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		lock.Close()
		return "", nil, fmt.Errorf("installcheck: locking %s: %w", lock.Name(), err)
	}
	release = func() { lock.Close() } // closing the file drops the lock
	for _, stale := range []string{
		filepath.Join(dir, filepath.FromSlash(prefix)),
		filepath.Join(dir, "cache", "download", filepath.FromSlash(prefix)),
	} {
		if err := os.RemoveAll(stale); err != nil {
			release()
			return "", nil, fmt.Errorf("installcheck: clearing %s: %w", stale, err)
		}
	}
	return dir, release, nil
}
