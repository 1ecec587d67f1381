package persistence

// Snapshots (--dbfilename) and the log's base files are dumps: a header of
// type FileDump, one OpSet record per live key, and an end record holding the
// number of keys, so that a dump cut short anywhere, even at a record
// boundary, is detected.

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/turnstile/turnstile/shards"
)

// dumpWriter writes a dump file through a buffer.
type dumpWriter struct {
	f       File
	w       *bufio.Writer
	scratch []byte
	e       Effect
	keys    int64
	size    int64
}

func createDump(fsys FS, path string) (*dumpWriter, error) {
	f, err := fsys.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	d := &dumpWriter{f: f, w: bufio.NewWriterSize(f, 256<<10)}
	d.scratch = appendHeader(d.scratch[:0], FileDump)
	if err := d.write(d.scratch); err != nil {
		f.Close()
		return nil, err
	}
	return d, nil
}

func (d *dumpWriter) write(b []byte) error {
	_, err := d.w.Write(b)
	d.size += int64(len(b))
	return err
}

// emit is the EmitFunc handed to a DumpFunc.
func (d *dumpWriter) emit(db int, key []byte, e shards.Entry) error {
	if _, ok := valueCode(e.Kind); !ok {
		return fmt.Errorf("persistence: cannot dump entry kind %d", e.Kind)
	}
	if db < 0 || db > maxDB {
		return fmt.Errorf("persistence: cannot dump database %d", db)
	}
	d.e = Effect{Op: OpSet, DB: db, Key: key, Entry: e}
	d.scratch = appendRecord(d.scratch[:0], &d.e)
	d.e = Effect{}
	d.keys++
	err := d.write(d.scratch)
	if cap(d.scratch) > 1<<20 {
		d.scratch = nil // do not keep a huge value's buffer
	}
	return err
}

// finish writes the end record, flushes and fsyncs, and closes the file.
func (d *dumpWriter) finish() error {
	d.scratch = appendEndRecord(d.scratch[:0], d.keys)
	err := d.write(d.scratch)
	if err == nil {
		err = d.w.Flush()
	}
	if err == nil {
		err = d.f.Sync()
	}
	if cerr := d.f.Close(); err == nil {
		err = cerr
	}
	return err
}

func (d *dumpWriter) abort() { d.f.Close() }

// writeDumpFile writes a complete dump to path (no rename) and returns its
// size.
func writeDumpFile(fsys FS, path string, dump DumpFunc) (int64, error) {
	d, err := createDump(fsys, path)
	if err != nil {
		return 0, fmt.Errorf("persistence: creating %s: %w", path, err)
	}
	if dump != nil {
		if err := dump(d.emit); err != nil {
			d.abort()
			return 0, err
		}
	}
	if err := d.finish(); err != nil {
		return 0, fmt.Errorf("persistence: writing %s: %w", path, err)
	}
	return d.size, nil
}

// WriteSnapshot writes a snapshot of what dump emits to path: to path+".tmp"
// first, fsynced, then renamed over path, then the directory fsynced. dump
// may run while the keyspace changes (see DumpFunc); the file is replaced
// only when complete. On error the temporary file is removed and path is
// untouched.
func WriteSnapshot(fsys FS, path string, dump DumpFunc) error {
	if fsys == nil {
		fsys = OSFS{}
	}
	tmp := path + ".tmp"
	if _, err := writeDumpFile(fsys, tmp, dump); err != nil {
		fsys.Remove(tmp)
		return err
	}
	if err := fsys.Rename(tmp, path); err != nil {
		fsys.Remove(tmp)
		return err
	}
	if err := fsys.SyncDir(filepath.Dir(path)); err != nil {
		return fmt.Errorf("persistence: fsync of directory %s: %w", filepath.Dir(path), err)
	}
	return nil
}

// LoadSnapshot reads the snapshot at path and calls apply for every key in
// it (key and e.Str alias a buffer reused for the next key: apply must copy
// them). A missing file returns a zero LoadInfo and an error satisfying
// errors.Is(err, os.ErrNotExist); any damage, including a file cut short, is
// a *CorruptError. An error from apply is returned as is. Keys are passed
// whatever their expiry: dropping those already expired is the caller's job.
func LoadSnapshot(fsys FS, path string, apply EmitFunc) (LoadInfo, error) {
	if fsys == nil {
		fsys = OSFS{}
	}
	res, err := scanFile(fsys, path, FileDump, func(e *Effect) error {
		return apply(e.DB, e.Key, e.Entry)
	})
	info := LoadInfo{Records: res.records, Bytes: res.validLen, Files: 1}
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return LoadInfo{}, err
		}
		return info, err
	}
	if res.problem != nil {
		return info, res.problem
	}
	return info, nil
}
