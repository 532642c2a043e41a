package installcheck

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/mod/modfile"
)

// ReleaseVersion is the version every in-tree module requires of the others,
// the version their tags carry when they are released together: the core as
// vX.Y.Z, each nested module at its directory, e.g. contrib/redis/vX.Y.Z.
const ReleaseVersion = "v0.1.0"

// notPublished marks a module that users are not meant to install.
const notPublished = "Not published"

// Module is one go.mod of the tree.
type Module struct {
	Path      string        // the module path
	Dir       string        // its directory, relative to the tree's root ("." for the root)
	Published bool          // false when its go.mod says "// Not published"
	File      *modfile.File // its parsed go.mod
	files     []string      // the files of the tree under Dir, relative to Dir
}

// FindModules returns every module of the tree rooted at root, sorted by
// directory. In a git checkout the files are those git tracks and the
// untracked ones it does not ignore, as they are in the working tree (so an
// uncommitted change is checked, and build output is not); elsewhere every
// file under root.
func FindModules(root string) ([]Module, error) {
	files, err := treeFiles(root)
	if err != nil {
		return nil, err
	}
	var mods []Module
	for _, f := range files {
		if filepath.Base(f) != "go.mod" {
			continue
		}
		data, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			return nil, err
		}
		mf, err := modfile.Parse(f, data, nil)
		if err != nil {
			return nil, err
		}
		if mf.Module == nil {
			return nil, fmt.Errorf("installcheck: %s has no module line", f)
		}
		mods = append(mods, Module{
			Path:      mf.Module.Mod.Path,
			Dir:       filepath.ToSlash(filepath.Dir(f)),
			Published: !markedNotPublished(mf),
			File:      mf,
		})
	}
	if len(mods) == 0 {
		return nil, fmt.Errorf("installcheck: no go.mod under %s", root)
	}
	sort.Slice(mods, func(i, j int) bool { return mods[i].Dir < mods[j].Dir })
	for i := range mods {
		mods[i].files = filesUnder(files, mods[i].Dir)
	}
	return mods, nil
}

func markedNotPublished(mf *modfile.File) bool {
	for _, c := range mf.Module.Syntax.Before {
		if strings.Contains(c.Token, notPublished) {
			return true
		}
	}
	return false
}

// filesUnder returns the files below dir (all of them for "."), relative to
// it. Files of modules nested deeper stay in the list: zip.Create leaves them
// out because it sees their go.mod.
func filesUnder(files []string, dir string) []string {
	if dir == "." {
		return files
	}
	var out []string
	for _, f := range files {
		if rest, ok := strings.CutPrefix(f, dir+"/"); ok {
			out = append(out, rest)
		}
	}
	return out
}

// treeFiles lists the files of the tree, slash-separated and relative to root.
func treeFiles(root string) ([]string, error) {
	cmd := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	cmd.Dir = root
	out, err := cmd.Output()
	if err == nil {
		var files []string
		for _, f := range bytes.Split(out, []byte{0}) {
			if len(f) == 0 {
				continue
			}
			// A file deleted in the working tree but still in the index.
			if _, err := os.Lstat(filepath.Join(root, string(f))); errors.Is(err, fs.ErrNotExist) {
				continue
			}
			files = append(files, string(f))
		}
		sort.Strings(files)
		return files, nil
	}
	var files []string
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == ".bin") {
			return filepath.SkipDir
		}
		if d.Type().IsRegular() {
			rel, err := filepath.Rel(root, p)
			if err != nil {
				return err
			}
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	sort.Strings(files)
	return files, err
}

// CheckRequirements reports every require of an in-tree module that is not
// at version, and every such require without a replace directive pointing at
// that module's directory (which is how the tree builds itself before the
// tags exist). Each problem names the go.mod and the module it requires.
func CheckRequirements(mods []Module, version string) error {
	byPath := make(map[string]Module, len(mods))
	for _, m := range mods {
		byPath[m.Path] = m
	}
	var errs []error
	for _, m := range mods {
		replaced := make(map[string]string)
		for _, r := range m.File.Replace {
			replaced[r.Old.Path] = r.New.Path
		}
		for _, r := range m.File.Require {
			dep, inTree := byPath[r.Mod.Path]
			if !inTree {
				continue
			}
			gomod := filepath.ToSlash(filepath.Join(m.Dir, "go.mod"))
			if r.Mod.Version != version {
				errs = append(errs, fmt.Errorf("%s requires %s %s; in-tree modules require each other at the release version %s", gomod, r.Mod.Path, r.Mod.Version, version))
			}
			want, err := filepath.Rel(m.Dir, dep.Dir)
			if err != nil {
				return err
			}
			got, ok := replaced[r.Mod.Path]
			if !ok || filepath.Clean(got) != filepath.Clean(want) {
				errs = append(errs, fmt.Errorf("%s requires %s without `replace %s => %s` (the tree builds against itself)", gomod, r.Mod.Path, r.Mod.Path, filepath.ToSlash(want)))
			}
		}
	}
	return errors.Join(errs...)
}
