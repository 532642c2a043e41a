package installcheck

import (
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/mod/module"
	"golang.org/x/mod/zip"
)

// Publish writes the published modules among mods, found in the tree at root,
// into proxyDir at version, in the layout of the module proxy protocol
// (MODULE/@v/list, VERSION.info, VERSION.mod and VERSION.zip, with module
// paths case-encoded), so that GOPROXY=file://proxyDir serves them. The
// go.mod served is the tree's own: its replace directives are there, as they
// would be in a tagged release, and the go command ignores them in a
// dependency.
func Publish(root, proxyDir, version string, mods []Module) error {
	for _, m := range mods {
		if !m.Published {
			continue
		}
		if err := publishOne(root, proxyDir, module.Version{Path: m.Path, Version: version}, m); err != nil {
			return fmt.Errorf("installcheck: publishing %s (%s): %w", m.Path, m.Dir, err)
		}
	}
	return nil
}

func publishOne(root, proxyDir string, mv module.Version, m Module) error {
	escPath, err := module.EscapePath(mv.Path)
	if err != nil {
		return err
	}
	escVer, err := module.EscapeVersion(mv.Version)
	if err != nil {
		return err
	}
	dir := filepath.Join(proxyDir, filepath.FromSlash(escPath), "@v")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	modDir := filepath.Join(root, filepath.FromSlash(m.Dir))
	gomod, err := os.ReadFile(filepath.Join(modDir, "go.mod"))
	if err != nil {
		return err
	}
	info, err := json.Marshal(struct {
		Version string
		Time    time.Time
	}{mv.Version, time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)})
	if err != nil {
		return err
	}
	for name, data := range map[string][]byte{
		"list":           []byte(mv.Version + "\n"),
		escVer + ".info": info,
		escVer + ".mod":  gomod,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return err
		}
	}
	files := make([]zip.File, len(m.files))
	for i, f := range m.files {
		files[i] = treeFile{root: modDir, path: f}
	}
	out, err := os.Create(filepath.Join(dir, escVer+".zip"))
	if err != nil {
		return err
	}
	if err := zip.Create(out, mv, files); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// treeFile is one file of a module as zip.Create reads it.
type treeFile struct{ root, path string }

func (f treeFile) Path() string { return f.path }

func (f treeFile) Lstat() (fs.FileInfo, error) {
	return os.Lstat(filepath.Join(f.root, filepath.FromSlash(f.path)))
}

func (f treeFile) Open() (io.ReadCloser, error) {
	return os.Open(filepath.Join(f.root, filepath.FromSlash(f.path)))
}
