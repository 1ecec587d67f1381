// Package atomicfile replaces small files whole: a crash leaves the old
// file or the new one, never a mix (the clock's state, ACL SAVE, CONFIG
// REWRITE).
package atomicfile

import (
	"fmt"
	"os"
	"path/filepath"
)

// Write replaces path with data, with permissions perm: it writes a
// temporary file in the same directory, syncs it, renames it over path
// and syncs the directory (best effort: not every system can). The
// temporary file is removed on failure.
func Write(path string, data []byte, perm os.FileMode) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(perm)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync() // the rename itself survives a crash once the directory is synced
		d.Close()
	}
	return nil
}
