package persistence

// The manifest of the append-only log: which base file and which incremental
// files make up the log, in replay order (FORMAT.md, "Manifest").

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

const (
	manifestMagic   = "turnstile-manifest 1"
	maxManifestSize = 1 << 20
)

// manifest lists the files of the log. Names are relative to the data
// directory and have the form <Name>.<seq>.base or <Name>.<seq>.incr.
type manifest struct {
	base    string
	incrs   []string // replay order; appends go to the last
	history []string // files of an older generation, to be removed
}

func (m *manifest) encode() []byte {
	var b bytes.Buffer
	b.WriteString(manifestMagic + "\n")
	b.WriteString("base " + m.base + "\n")
	for _, n := range m.incrs {
		b.WriteString("incr " + n + "\n")
	}
	for _, n := range m.history {
		b.WriteString("history " + n + "\n")
	}
	fmt.Fprintf(&b, "crc32c %08x\n", crc32c(b.Bytes()))
	return b.Bytes()
}

// fileSeq returns the sequence number in a file name <name>.<seq>.<kind>,
// or ok=false when the file name is not of that form.
func fileSeq(file, name, kind string) (uint64, bool) {
	s, ok := strings.CutPrefix(file, name+".")
	if !ok {
		return 0, false
	}
	s, ok = strings.CutSuffix(s, "."+kind)
	if !ok || s == "" || len(s) > 19 || (len(s) > 1 && s[0] == '0') {
		return 0, false
	}
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseUint(s, 10, 64)
	return n, err == nil
}

func seqName(name string, seq uint64, kind string) string {
	return name + "." + strconv.FormatUint(seq, 10) + "." + kind
}

// maxSeq returns the highest sequence number the manifest names.
func (m *manifest) maxSeq(name string) uint64 {
	var hi uint64
	for _, f := range append(append([]string{m.base}, m.incrs...), m.history...) {
		for _, k := range []string{"base", "incr"} {
			if s, ok := fileSeq(f, name, k); ok && s > hi {
				hi = s
			}
		}
	}
	return hi
}

// parseManifest parses a manifest; name is the log's base name, which every
// listed file must start with. The returned reason is non-empty on damage;
// off is the byte offset of the offending line.
func parseManifest(b []byte, name string) (m manifest, off int64, reason string) {
	if len(b) == 0 || b[len(b)-1] != '\n' {
		return m, int64(len(b)), "manifest does not end with a newline (truncated)"
	}
	body := b[:len(b)-1]
	i := bytes.LastIndexByte(body, '\n') + 1 // start of the crc line
	crcLine := string(body[i:])
	sum, ok := strings.CutPrefix(crcLine, "crc32c ")
	if !ok || len(sum) != 8 {
		return m, int64(i), "missing crc32c line"
	}
	want, err := strconv.ParseUint(sum, 16, 32)
	if err != nil || strings.ToLower(sum) != sum {
		return m, int64(i), "bad crc32c line"
	}
	if crc32c(b[:i]) != uint32(want) {
		return m, int64(i), "manifest checksum mismatch"
	}
	lines := strings.SplitAfter(string(b[:i]), "\n")
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	if len(lines) == 0 || lines[0] != manifestMagic+"\n" {
		return m, 0, "not a Turnstile manifest (bad first line)"
	}
	seen := map[string]bool{}
	pos := int64(len(lines[0]))
	bases := 0
	for _, line := range lines[1:] {
		kind, file, ok := strings.Cut(strings.TrimSuffix(line, "\n"), " ")
		if !ok || seen[file] {
			return m, pos, fmt.Sprintf("bad line %q", strings.TrimSuffix(line, "\n"))
		}
		seen[file] = true
		_, isBase := fileSeq(file, name, "base")
		_, isIncr := fileSeq(file, name, "incr")
		switch {
		case kind == "base" && isBase:
			if bases++; bases > 1 {
				return m, pos, "more than one base file"
			}
			m.base = file
		case kind == "incr" && isIncr:
			m.incrs = append(m.incrs, file)
		case kind == "history" && (isBase || isIncr):
			m.history = append(m.history, file)
		default:
			return m, pos, fmt.Sprintf("bad line %q", strings.TrimSuffix(line, "\n"))
		}
		pos += int64(len(line))
	}
	if bases == 0 {
		return m, 0, "no base file"
	}
	if len(m.incrs) == 0 {
		return m, 0, "no incremental file"
	}
	return m, 0, ""
}

// readManifest reads and parses the manifest at path. A missing manifest is
// an error satisfying errors.Is(err, os.ErrNotExist); damage is a
// *CorruptError.
func readManifest(fsys FS, path, name string) (manifest, error) {
	f, err := fsys.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return manifest{}, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxManifestSize+1))
	if err != nil {
		return manifest{}, fmt.Errorf("persistence: reading %s: %w", path, err)
	}
	if len(b) > maxManifestSize {
		return manifest{}, &CorruptError{File: path, Offset: maxManifestSize, Reason: "manifest too large"}
	}
	m, off, reason := parseManifest(b, name)
	if reason != "" {
		return manifest{}, &CorruptError{File: path, Offset: off, Reason: reason}
	}
	return m, nil
}

// writeManifest replaces the manifest at path atomically: it writes
// path+".tmp", fsyncs it, renames it over path and fsyncs the directory.
func writeManifest(fsys FS, path string, m *manifest) error {
	tmp := path + ".tmp"
	if err := writeFileSync(fsys, tmp, m.encode()); err != nil {
		return err
	}
	return renameSync(fsys, tmp, path)
}

// writeFileSync creates (or truncates) path, writes b and fsyncs it.
func writeFileSync(fsys FS, path string, b []byte) error {
	f, err := fsys.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("persistence: writing %s: %w", path, err)
	}
	return nil
}

// renameSync renames oldpath to newpath and fsyncs newpath's directory.
func renameSync(fsys FS, oldpath, newpath string) error {
	if err := fsys.Rename(oldpath, newpath); err != nil {
		return err
	}
	if err := fsys.SyncDir(filepath.Dir(newpath)); err != nil {
		return fmt.Errorf("persistence: fsync of directory %s: %w", filepath.Dir(newpath), err)
	}
	return nil
}

// removeIfExists removes path; a file that does not exist is not an error.
func removeIfExists(fsys FS, path string) error {
	if err := fsys.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}
