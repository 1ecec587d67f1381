package persistence

// Check and repair of persistence files, for `turnstile check-aof [--fix]`.

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// Report describes one checked file.
type Report struct {
	Path     string
	Type     FileType // FileDump, FileIncr or FileManifest (0 if the header is unreadable)
	Size     int64    // file size when checked
	Records  int64    // whole, valid effect records before the first problem (GROUP and END records not counted)
	ValidLen int64    // length of the valid prefix: where Fix truncates
	Problem  *CorruptError
	// Torn: the problem is a torn tail (an incomplete or damaged last
	// record or group, or a zero-filled tail; ValidLen is then the start
	// of that record or of the group's GROUP record), which Load cuts off
	// by itself in the last incremental file of a log; otherwise it is
	// damage in the middle of the file, which refuses to load. For a dump,
	// Torn means the dump was cut short; a dump is never loaded in that
	// state.
	Torn  bool
	Fixed bool     // Fix or FixForce truncated the file to ValidLen
	Files []Report // for a manifest: the listed files, base first
}

// OK reports whether the file (and, for a manifest, every listed file) is
// free of problems.
func (r *Report) OK() bool {
	if r.Problem != nil {
		return false
	}
	for i := range r.Files {
		if !r.Files[i].OK() {
			return false
		}
	}
	return true
}

// Repaired reports whether Fix or FixForce repaired every problem found:
// for a data file, that it was truncated; for a manifest, that every listed
// file with a problem was (a damaged manifest itself is never repaired).
// It is false when there was no problem: see OK.
func (r *Report) Repaired() bool {
	if r.Type != FileManifest || len(r.Files) == 0 {
		return r.Problem != nil && r.Fixed
	}
	if r.Problem == nil {
		return false
	}
	for i := range r.Files {
		if f := &r.Files[i]; f.Problem != nil && !f.Fixed {
			return false
		}
	}
	return true
}

// String describes the report for people, one line per file.
func (r *Report) String() string {
	var b strings.Builder
	r.write(&b)
	return b.String()
}

func (r *Report) write(b *strings.Builder) {
	fmt.Fprintf(b, "%s: %s file, %d bytes", r.Path, r.Type, r.Size)
	if r.Type != FileManifest {
		fmt.Fprintf(b, ", %d records", r.Records)
	}
	switch {
	case r.Problem == nil:
		b.WriteString(": ok")
	case r.Torn:
		fmt.Fprintf(b, ": torn tail at offset %d (%s); %d bytes after it", r.Problem.Offset, r.Problem.Reason, r.Size-r.ValidLen)
	default:
		fmt.Fprintf(b, ": CORRUPT at offset %d (%s); %d bytes from there on", r.Problem.Offset, r.Problem.Reason, r.Size-r.ValidLen)
	}
	if r.Fixed {
		fmt.Fprintf(b, "; truncated to %d bytes", r.ValidLen)
	}
	b.WriteByte('\n')
	for i := range r.Files {
		b.WriteString("  ")
		r.Files[i].write(b)
	}
}

// Check reports on one file: a snapshot, a base or incremental file of the
// log, or the log's manifest (then on every file it lists, with a torn tail
// allowed only in the last incremental file, as Load does). The error is
// for I/O failures; damage is in the report.
func Check(fsys FS, path string) (Report, error) {
	if fsys == nil {
		fsys = OSFS{}
	}
	f, err := fsys.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return Report{Path: path}, err
	}
	head := make([]byte, len(manifestMagic))
	n, err := io.ReadFull(f, head)
	f.Close()
	if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
		return Report{Path: path}, err
	}
	if bytes.Equal(head[:n], []byte(manifestMagic)) {
		return checkManifest(fsys, path)
	}
	return checkData(fsys, path, true)
}

// checkData checks one data file. tornOK: a torn tail is reported as such
// (false: as damage, for files that may not have one).
func checkData(fsys FS, path string, tornOK bool) (Report, error) {
	res, err := scanFile(fsys, path, 0, func(*Effect) error { return nil })
	r := Report{Path: path, Type: res.typ, Size: res.size, Records: res.records, ValidLen: res.validLen, Problem: res.problem, Torn: res.torn}
	if r.Torn && !tornOK {
		r.Torn = false
		r.Problem.Reason += " (in a file that is not the last incremental file)"
	}
	return r, err
}

func checkManifest(fsys FS, path string) (Report, error) {
	r := Report{Path: path, Type: FileManifest}
	if st, err := fsys.Stat(path); err == nil {
		r.Size = st.Size()
	}
	name := strings.TrimSuffix(filepath.Base(path), ".manifest")
	m, err := readManifest(fsys, path, name)
	if err != nil {
		if ce, ok := err.(*CorruptError); ok {
			r.Problem = ce
			r.ValidLen = ce.Offset
			return r, nil
		}
		return r, err
	}
	r.ValidLen = r.Size
	dir := filepath.Dir(path)
	files := append([]string{m.base}, m.incrs...)
	for i, name := range files {
		p := filepath.Join(dir, name)
		want := FileIncr
		if i == 0 {
			want = FileDump
		}
		fr, err := checkData(fsys, p, i == len(files)-1)
		if os.IsNotExist(err) {
			fr.Problem = &CorruptError{File: p, Reason: "listed in the manifest but missing"}
			err = nil
		}
		if err != nil {
			return r, err
		}
		if fr.Problem == nil && fr.Type != want {
			fr.Problem = &CorruptError{File: p, Reason: fmt.Sprintf("file type is %s, the manifest lists it as %s", fr.Type, want)}
			fr.ValidLen = 0
		}
		r.Files = append(r.Files, fr)
		if r.Problem == nil && fr.Problem != nil {
			r.Problem = fr.Problem
			r.Torn = fr.Torn
		}
	}
	return r, nil
}

// Fix checks path like Check and truncates a torn tail of an incremental
// file (for a manifest: of its last incremental file), which is what Load
// would do. Damage in the middle of a file, and a dump cut short, are
// reported and left alone: see FixForce.
func Fix(fsys FS, path string) (Report, error) {
	return fix(fsys, path, false)
}

// FixForce is Fix that also repairs damage in the middle of a file, by
// truncating the file at its first bad record: every effect from there on is
// lost. A dump cut short or damaged gets a new end record after its last
// good key. For a manifest, every damaged file it lists is truncated this
// way; a damaged manifest itself is not repaired.
func FixForce(fsys FS, path string) (Report, error) {
	return fix(fsys, path, true)
}

func fix(fsys FS, path string, force bool) (Report, error) {
	if fsys == nil {
		fsys = OSFS{}
	}
	r, err := Check(fsys, path)
	if err != nil || r.Problem == nil {
		return r, err
	}
	if r.Type == FileManifest {
		for i := range r.Files {
			fr := &r.Files[i]
			if fr.Problem == nil || fr.Type == 0 || (!force && !(fr.Torn && fr.Type == FileIncr)) {
				continue
			}
			if err := truncateAt(fsys, fr); err != nil {
				return r, err
			}
		}
		return r, nil
	}
	if r.Type == 0 {
		if force {
			return r, fmt.Errorf("persistence: %s: the header is damaged; not repairable", path)
		}
		return r, nil
	}
	if !force && !(r.Torn && r.Type == FileIncr) {
		return r, nil
	}
	return r, truncateAt(fsys, &r)
}

// truncateAt cuts the data file of r at r.ValidLen (and ends a dump with an
// end record), fsyncs it, and marks r fixed.
func truncateAt(fsys FS, r *Report) error {
	if r.ValidLen < headerLen {
		return fmt.Errorf("persistence: %s: the header is damaged; not repairable", r.Path)
	}
	f, err := fsys.OpenFile(r.Path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	err = f.Truncate(r.ValidLen)
	if err == nil && r.Type == FileDump {
		if _, err = f.Seek(r.ValidLen, io.SeekStart); err == nil {
			_, err = f.Write(appendEndRecord(nil, r.Records))
		}
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("persistence: truncating %s: %w", r.Path, err)
	}
	r.Fixed = true
	return nil
}
