package persistence

// Record encoding: the file header and the framed, checksummed records that
// every data file (dump or incremental log) is made of. FORMAT.md is the
// reference; this file is the implementation.

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"

	"github.com/turnstile/turnstile/coll"
	"github.com/turnstile/turnstile/shards"
)

// FileType is the type byte of a data file's header (or, for Check, a
// manifest).
type FileType uint8

const (
	FileDump     FileType = 1 // a snapshot, or the base file of the log: OpSet records then an end record
	FileIncr     FileType = 2 // an incremental log file: effects of any Op
	FileManifest FileType = 3 // the log's manifest (text; never in a data file header)
)

func (t FileType) String() string {
	switch t {
	case FileDump:
		return "dump"
	case FileIncr:
		return "incr"
	case FileManifest:
		return "manifest"
	}
	return fmt.Sprintf("type(%d)", uint8(t))
}

const (
	fileMagic = "TURNSTIL"
	// formatVersion is the version this build writes. Version 2 added
	// collection values and the EXPIRE and FIELD ops, version 3 the GROUP
	// record (group.go), version 4 the RANGE op; files of versions 1 to 3
	// still load.
	formatVersion = 4
	oldestVersion = 1
	headerLen     = 16 // magic 8, version 1, type 1, reserved 2, CRC-32C 4

	recHeaderLen = 9 // length u32le, CRC-8 of the length, CRC-32C of the payload u32le

	// MaxPayload is the largest record payload the format allows (the
	// length field is 32 bits). Decoding also bounds every length by the
	// bytes left in the file, so no allocation follows an unchecked length.
	MaxPayload = math.MaxUint32

	maxDB = math.MaxInt32
)

// castagnoli is the CRC-32C table; crc32 computes with it in hardware where
// it can. It is never written after initialisation.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func crc32c(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

// crc8 is CRC-8/SMBUS (polynomial 0x07, initial value 0, no reflection, no
// final XOR), used on the 4 length bytes of a record header. Any single-bit
// error (and any burst up to 8 bits) in the length or in the check byte is
// detected, so a damaged length can never pass for a record that merely runs
// past the end of the file (a torn tail).
func crc8(b []byte) byte {
	var c byte
	for _, x := range b {
		c = crc8Table[c^x]
	}
	return c
}

// crc8Table is never written after initialisation.
var crc8Table = func() (t [256]byte) {
	for i := range t {
		c := byte(i)
		for range 8 {
			if c&0x80 != 0 {
				c = c<<1 ^ 0x07
			} else {
				c <<= 1
			}
		}
		t[i] = c
	}
	return t
}()

// CorruptError reports damage in a persistence file: which file, at which
// byte offset (the start of the damaged header or record), and what is wrong.
type CorruptError struct {
	File   string
	Offset int64
	Reason string
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("persistence: %s is corrupt at offset %d: %s", e.File, e.Offset, e.Reason)
}

// appendHeader appends a data file header of type t to dst.
func appendHeader(dst []byte, t FileType) []byte {
	start := len(dst)
	dst = append(dst, fileMagic...)
	dst = append(dst, formatVersion, byte(t), 0, 0)
	return binary.LittleEndian.AppendUint32(dst, crc32c(dst[start:]))
}

// parseHeader checks a data file header and returns its type; the reason is
// non-empty when the header is bad.
func parseHeader(h []byte) (FileType, string) {
	if len(h) < headerLen {
		return 0, "file shorter than its header"
	}
	if crc32c(h[:12]) != binary.LittleEndian.Uint32(h[12:16]) {
		if string(h[:8]) != fileMagic {
			return 0, "not a Turnstile data file (bad magic)"
		}
		return 0, "header checksum mismatch"
	}
	if string(h[:8]) != fileMagic {
		return 0, "not a Turnstile data file (bad magic)"
	}
	if h[8] < oldestVersion || h[8] > formatVersion {
		return 0, fmt.Sprintf("unsupported format version %d (this build reads %d to %d)", h[8], oldestVersion, formatVersion)
	}
	if h[10] != 0 || h[11] != 0 {
		return 0, "reserved header bytes are not zero"
	}
	t := FileType(h[9])
	if t != FileDump && t != FileIncr {
		return 0, fmt.Sprintf("unknown file type %d", h[9])
	}
	return t, ""
}

// appendRecord appends the framed record of effect e to dst. It panics on an
// effect the format cannot represent (a programming error in the caller).
func appendRecord(dst []byte, e *Effect) []byte {
	start := len(dst)
	dst = append(dst, make([]byte, recHeaderLen)...) // does not allocate
	dst = appendPayload(dst, e)
	return sealRecord(dst, start)
}

// appendEndRecord appends the end record of a dump holding count keys.
func appendEndRecord(dst []byte, count int64) []byte {
	start := len(dst)
	dst = append(dst, make([]byte, recHeaderLen)...)
	dst = append(dst, opcodeEnd)
	dst = binary.AppendUvarint(dst, uint64(count))
	return sealRecord(dst, start)
}

// sealRecord fills in the header of the record starting at dst[start].
func sealRecord(dst []byte, start int) []byte {
	p := dst[start+recHeaderLen:]
	if uint64(len(p)) > MaxPayload {
		panic("persistence: record payload larger than MaxPayload")
	}
	h := dst[start : start+recHeaderLen]
	binary.LittleEndian.PutUint32(h[0:4], uint32(len(p)))
	h[4] = crc8(h[0:4])
	binary.LittleEndian.PutUint32(h[5:9], crc32c(p))
	return dst
}

// appendPayload appends the payload of effect e to dst, translating its Op
// and entry kind into the file's codes (codes.go). It panics on an effect
// the format cannot represent.
func appendPayload(dst []byte, e *Effect) []byte {
	op, ok := opCode(e.Op)
	if !ok {
		panic(fmt.Sprintf("persistence: cannot log op %d", e.Op))
	}
	if e.DB < 0 || e.DB > maxDB {
		panic(fmt.Sprintf("persistence: cannot log database %d", e.DB))
	}
	db, key := e.DB, e.Key
	switch e.Op {
	case OpFlushDB:
		key = nil
	case OpFlushAll:
		db, key = 0, nil
	}
	dst = append(dst, op)
	dst = binary.AppendUvarint(dst, uint64(db))
	dst = binary.AppendUvarint(dst, uint64(len(key)))
	dst = append(dst, key...)
	switch e.Op {
	case OpExpire:
		return binary.AppendVarint(dst, e.Entry.Exp)
	case OpRange:
		dst = binary.AppendUvarint(dst, uint64(e.Off))
		dst = binary.AppendUvarint(dst, uint64(e.Len))
		dst = binary.AppendUvarint(dst, uint64(len(e.Entry.Str)))
		return append(dst, e.Entry.Str...)
	case OpField:
		fc, ok := fieldCode(e.Field)
		if !ok {
			panic(fmt.Sprintf("persistence: cannot log collection op %s", e.Field))
		}
		dst = append(dst, fc)
		dst = binary.AppendUvarint(dst, uint64(len(e.Args)))
		for _, a := range e.Args {
			dst = binary.AppendUvarint(dst, uint64(len(a)))
			dst = append(dst, a...)
		}
		return dst
	case OpSet:
	default:
		return dst
	}
	vc, ok := valueCode(e.Entry.Kind)
	if !ok {
		panic(fmt.Sprintf("persistence: cannot log entry kind %d", e.Entry.Kind))
	}
	dst = append(dst, vc)
	switch vc {
	case valueInt:
		dst = binary.AppendVarint(dst, e.Entry.Int)
	case valueBytes:
		dst = binary.AppendUvarint(dst, uint64(len(e.Entry.Str)))
		dst = append(dst, e.Entry.Str...)
	case valueHash, valueList, valueSet, valueZSet, valueStream:
		v, ok := e.Entry.Obj.(coll.Value)
		if !ok {
			panic(fmt.Sprintf("persistence: entry kind %d without a collection value", e.Entry.Kind))
		}
		body := v.AppendBinary(nil)
		dst = binary.AppendUvarint(dst, uint64(len(body)))
		dst = append(dst, body...)
	default: // valueCode and this switch disagree
		panic(fmt.Sprintf("persistence: no encoding for value code %d (entry kind %d)", vc, e.Entry.Kind))
	}
	return binary.AppendVarint(dst, e.Entry.Exp)
}

// recKind says what a record is.
type recKind uint8

const (
	recEffect recKind = iota // an effect (decoded into the Effect)
	recEnd                   // a dump's END record: count is its number of keys
	recGroup                 // a GROUP record: the count records after it, length bytes in all, are one unit
)

// recMeta describes a decoded record that is not an effect.
type recMeta struct {
	kind   recKind
	count  uint64 // recEnd: keys; recGroup: records in the group
	length uint64 // recGroup: bytes of the group's records (headers included)
}

// decodePayload decodes a record payload into e (whose Key and Entry.Str then
// alias p), translating the file's codes (codes.go) into an Op and an entry
// kind; for an END or GROUP record it returns what the record says instead,
// leaving e alone. reason is non-empty when the payload is malformed.
func decodePayload(p []byte, e *Effect) (recMeta, string) {
	if len(p) == 0 {
		return recMeta{}, "empty payload"
	}
	code := p[0]
	p = p[1:]
	switch code {
	case opcodeEnd:
		n, k := binary.Uvarint(p)
		if k <= 0 {
			return recMeta{}, "bad key count in end record"
		}
		if k != len(p) {
			return recMeta{}, "trailing bytes in end record"
		}
		return recMeta{kind: recEnd, count: n}, ""
	case opcodeGroup:
		return decodeGroup(p)
	}
	op, ok := opOf(code)
	if !ok {
		return recMeta{}, fmt.Sprintf("unknown op %d", code)
	}
	db, k := binary.Uvarint(p)
	if k <= 0 || db > maxDB {
		return recMeta{}, "bad database number"
	}
	p = p[k:]
	kl, k := binary.Uvarint(p)
	if k <= 0 || kl > uint64(len(p)-k) {
		return recMeta{}, "bad key length"
	}
	p = p[k:]
	*e = Effect{Op: op, DB: int(db), Key: p[:kl:kl]}
	p = p[kl:]
	switch e.Op {
	case OpExpire:
		exp, k := binary.Varint(p)
		if k <= 0 || k != len(p) {
			return recMeta{}, "bad expiry"
		}
		e.Entry.Exp = exp
		return recMeta{}, ""
	case OpField:
		return recMeta{}, decodeField(p, e)
	case OpRange:
		return recMeta{}, decodeRange(p, e)
	}
	if e.Op != OpSet {
		if len(p) != 0 {
			return recMeta{}, "trailing bytes after key"
		}
		switch e.Op { // fields the op ignores
		case OpFlushDB:
			e.Key = nil
		case OpFlushAll:
			e.DB, e.Key = 0, nil
		}
		return recMeta{}, ""
	}
	if len(p) == 0 {
		return recMeta{}, "missing value kind"
	}
	vc := p[0]
	p = p[1:]
	kind, ok := kindOf(vc)
	if !ok {
		return recMeta{}, fmt.Sprintf("unknown value kind %d", vc)
	}
	switch vc {
	case valueInt:
		v, k := binary.Varint(p)
		if k <= 0 {
			return recMeta{}, "bad integer value"
		}
		e.Entry = shards.Entry{Kind: kind, Int: v}
		p = p[k:]
	case valueBytes:
		vl, k := binary.Uvarint(p)
		if k <= 0 || vl > uint64(len(p)-k) {
			return recMeta{}, "bad value length"
		}
		p = p[k:]
		e.Entry = shards.Entry{Kind: kind, Str: p[:vl:vl]}
		p = p[vl:]
	case valueHash, valueList, valueSet, valueZSet, valueStream:
		vl, k := binary.Uvarint(p)
		if k <= 0 || vl > uint64(len(p)-k) {
			return recMeta{}, "bad value length"
		}
		p = p[k:]
		v, err := coll.Decode(kind, p[:vl])
		if err != nil {
			return recMeta{}, fmt.Sprintf("bad %s value: %v", shards.Entry{Kind: kind}.TypeName(), err)
		}
		e.Entry = shards.Entry{Kind: kind, Obj: v}
		p = p[vl:]
	default: // kindOf and this switch disagree
		return recMeta{}, fmt.Sprintf("unknown value kind %d", vc)
	}
	exp, k := binary.Varint(p)
	if k <= 0 {
		return recMeta{}, "bad expiry"
	}
	if k != len(p) {
		return recMeta{}, "trailing bytes after expiry"
	}
	e.Entry.Exp = exp
	return recMeta{}, ""
}

// decodeField decodes the rest of a FIELD payload (after the key) into e,
// whose Args then alias p. It returns a reason when p is malformed.
func decodeField(p []byte, e *Effect) string {
	if len(p) == 0 {
		return "missing field op"
	}
	op, ok := fieldOp(p[0])
	if !ok {
		return fmt.Sprintf("unknown field op %d", p[0])
	}
	p = p[1:]
	n, k := binary.Uvarint(p)
	if k <= 0 || n > uint64(len(p)-k) { // each argument takes a byte at least
		return "bad argument count"
	}
	p = p[k:]
	args := make([][]byte, 0, n)
	for range n {
		l, k := binary.Uvarint(p)
		if k <= 0 || l > uint64(len(p)-k) {
			return "bad argument length"
		}
		p = p[k:]
		args = append(args, p[:l:l])
		p = p[l:]
	}
	if len(p) != 0 {
		return "trailing bytes after arguments"
	}
	e.Field, e.Args = op, args
	return ""
}

// decodeRange decodes the rest of a RANGE payload (after the key) into e,
// whose Entry.Str then aliases p. It returns a reason when p is malformed:
// the bytes must fit in the value's new length, which is at most
// MaxPayload (the longest string a SET record could hold).
func decodeRange(p []byte, e *Effect) string {
	off, k := binary.Uvarint(p)
	if k <= 0 || off > MaxPayload {
		return "bad range offset"
	}
	p = p[k:]
	n, k := binary.Uvarint(p)
	if k <= 0 || n > MaxPayload {
		return "bad range length"
	}
	p = p[k:]
	dl, k := binary.Uvarint(p)
	if k <= 0 || dl != uint64(len(p)-k) {
		return "bad range data length"
	}
	if off+dl > n {
		return "range data past the value's length"
	}
	p = p[k:]
	e.Off, e.Len = int64(off), int64(n)
	e.Entry = shards.Entry{Kind: shards.KindBytes, Str: p[:dl:dl]}
	return ""
}

// decodeRecord decodes the first record of b (used by the fuzzer and by
// tests; files are read with a recReader). n is the record's length in bytes;
// m says whether it is an effect (decoded into e) or an END or GROUP record.
func decodeRecord(b []byte, e *Effect) (n int, m recMeta, err error) {
	if len(b) < recHeaderLen {
		return 0, recMeta{}, errors.New("short record header")
	}
	if crc8(b[0:4]) != b[4] {
		return 0, recMeta{}, errors.New("record length checksum mismatch")
	}
	l := binary.LittleEndian.Uint32(b[0:4])
	if l == 0 {
		return 0, recMeta{}, errors.New("empty record")
	}
	if uint64(l) > uint64(len(b)-recHeaderLen) {
		return 0, recMeta{}, errors.New("record runs past the end of the input")
	}
	p := b[recHeaderLen : recHeaderLen+int(l)]
	if crc32c(p) != binary.LittleEndian.Uint32(b[5:9]) {
		return 0, recMeta{}, errors.New("record checksum mismatch")
	}
	m, reason := decodePayload(p, e)
	if reason != "" {
		return 0, recMeta{}, errors.New(reason)
	}
	return recHeaderLen + int(l), m, nil
}

// Outcome of reading one record.
type recStatus uint8

const (
	recOK      recStatus = iota
	recEOF               // clean end of file at a record boundary
	recTorn              // an incomplete last record: a write cut short
	recCorrupt           // damage
)

// recReader reads the records of one data file, sequentially, bounding every
// length by what is left of the file.
type recReader struct {
	r       *bufio.Reader
	path    string
	size    int64 // file size
	off     int64 // offset of the next unread byte
	version byte  // format version in the file's header
	hdr     [recHeaderLen]byte
	buf     []byte   // payload buffer, reused
	gbuf    []byte   // a group's records, reused (group.go)
	effs    []Effect // a group's effects, aliasing gbuf, reused
}

func newRecReader(r io.Reader, path string, size int64) *recReader {
	return &recReader{r: bufio.NewReaderSize(r, 64<<10), path: path, size: size}
}

// header reads and checks the file header.
func (rr *recReader) header() (FileType, *CorruptError, error) {
	var h [headerLen]byte
	if rr.size < headerLen {
		return 0, &CorruptError{File: rr.path, Offset: 0, Reason: "file shorter than its header"}, nil
	}
	if _, err := io.ReadFull(rr.r, h[:]); err != nil {
		return 0, nil, fmt.Errorf("persistence: reading %s: %w", rr.path, err)
	}
	rr.off = headerLen
	rr.version = h[8]
	t, reason := parseHeader(h[:])
	if reason != "" {
		return 0, &CorruptError{File: rr.path, Offset: 0, Reason: reason}, nil
	}
	return t, nil, nil
}

// next reads the record at rr.off. On recOK it returns the payload (valid
// until the next call); on recTorn or recCorrupt, the reason, with start the
// offset of the record that could not be read. err is an I/O error.
func (rr *recReader) next() (payload []byte, start int64, st recStatus, reason string, err error) {
	start = rr.off
	rem := rr.size - start
	if rem == 0 {
		return nil, start, recEOF, "", nil
	}
	if rem < recHeaderLen {
		return nil, start, recTorn, "incomplete record header at end of file", nil
	}
	if _, err := io.ReadFull(rr.r, rr.hdr[:]); err != nil {
		return nil, start, 0, "", rr.ioErr(err)
	}
	h := rr.hdr[:]
	if crc8(h[0:4]) != h[4] {
		return rr.bad(start, "record length checksum mismatch")
	}
	n := int64(binary.LittleEndian.Uint32(h[0:4]))
	if n == 0 {
		return rr.bad(start, "empty record")
	}
	if n > rem-recHeaderLen {
		return nil, start, recTorn, "last record runs past the end of the file", nil
	}
	if int64(cap(rr.buf)) < n {
		rr.buf = make([]byte, n) // n is bounded by the file size
	}
	p := rr.buf[:n]
	if _, err := io.ReadFull(rr.r, p); err != nil {
		return nil, start, 0, "", rr.ioErr(err)
	}
	rr.off = start + recHeaderLen + n
	if crc32c(p) != binary.LittleEndian.Uint32(h[5:9]) {
		if rr.off == rr.size {
			return nil, start, recTorn, "checksum mismatch in the last record", nil
		}
		return rr.bad(start, "record checksum mismatch")
	}
	return p, start, recOK, "", nil
}

// bad classifies a record that failed its checks, everything up to the
// reader's position having been read: it is a torn tail when the rest of the
// file is zeros (a crash extended the file before all of its data reached
// the disk: the record's first bytes may be there, the rest reads as zeros),
// damage otherwise. A whole record can never pass for that: its payload
// starts with a non-zero op code (codes.go), and a record after it has a
// non-zero length.
func (rr *recReader) bad(start int64, reason string) ([]byte, int64, recStatus, string, error) {
	zeros, err := rr.zerosToEnd()
	if err != nil {
		return nil, start, 0, "", err
	}
	if !zeros {
		return nil, start, recCorrupt, reason, nil
	}
	return nil, start, recTorn, reason + " followed by zeros to the end of the file", nil
}

// zerosToEnd reads the rest of the file and reports whether it is all zero
// bytes (or nothing). The reader is not usable for records afterwards.
func (rr *recReader) zerosToEnd() (bool, error) {
	var chunk [4096]byte
	for {
		n, err := rr.r.Read(chunk[:])
		if !allZero(chunk[:n]) {
			return false, nil
		}
		if err == io.EOF {
			return true, nil
		}
		if err != nil {
			return false, rr.ioErr(err)
		}
	}
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

func (rr *recReader) ioErr(err error) error {
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return fmt.Errorf("persistence: %s shrank while being read", rr.path)
	}
	return fmt.Errorf("persistence: reading %s: %w", rr.path, err)
}

func (rr *recReader) corrupt(off int64, reason string) *CorruptError {
	return &CorruptError{File: rr.path, Offset: off, Reason: reason}
}

// scanResult describes one data file read to its end or to its first
// problem.
type scanResult struct {
	typ      FileType
	version  byte  // format version in the header
	records  int64 // effects passed to fn (for a dump: keys); GROUP and END records are not counted
	validLen int64 // length of the longest valid prefix: header and whole, good records and groups
	size     int64
	problem  *CorruptError // first problem, nil if none
	torn     bool          // the problem is a torn tail (an incomplete last record or group)
}

// scanFile reads the data file at path and calls fn for each effect (for a
// dump: each key, as an OpSet effect). The effects of a group are passed
// only once the whole group has been read and checked (group.go). want is
// the required file type (0: any). Damage is reported in the result; err is
// an I/O error, an error from fn, or the file not existing
// (errors.Is(err, os.ErrNotExist)).
func scanFile(fsys FS, path string, want FileType, fn func(*Effect) error) (res scanResult, err error) {
	f, err := fsys.OpenFile(path, osRDONLY, 0)
	if err != nil {
		return res, err
	}
	defer f.Close()
	size, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		return res, fmt.Errorf("persistence: %s: %w", path, err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return res, fmt.Errorf("persistence: %s: %w", path, err)
	}
	res.size = size
	rr := newRecReader(f, path, size)
	t, ce, err := rr.header()
	if err != nil || ce != nil {
		res.problem = ce
		return res, err
	}
	res.typ, res.version = t, rr.version
	res.validLen = headerLen
	if want != 0 && t != want {
		res.problem = rr.corrupt(0, fmt.Sprintf("file type is %s, want %s", t, want))
		return res, nil
	}
	var e Effect
	for {
		p, start, st, reason, err := rr.next()
		if err != nil {
			return res, err
		}
		switch st {
		case recEOF:
			if t == FileDump {
				res.problem = rr.corrupt(start, "dump ends without its end record (truncated)")
				res.torn = true
			}
			return res, nil
		case recTorn:
			res.problem = rr.corrupt(start, reason)
			res.torn = true
			return res, nil
		case recCorrupt:
			res.problem = rr.corrupt(start, reason)
			return res, nil
		}
		m, reason := decodePayload(p, &e)
		if reason != "" {
			res.problem = rr.corrupt(start, reason)
			return res, nil
		}
		switch {
		case t == FileDump && m.kind == recEnd:
			if m.count != uint64(res.records) {
				res.problem = rr.corrupt(start, fmt.Sprintf("end record counts %d keys, the dump holds %d", m.count, res.records))
				return res, nil
			}
			if rr.off != size {
				res.problem = rr.corrupt(rr.off, "data after the end record")
				return res, nil
			}
			res.validLen = rr.off
			return res, nil
		case t == FileDump && (m.kind != recEffect || e.Op != OpSet):
			res.problem = rr.corrupt(start, fmt.Sprintf("op %d in a dump", p[0])) // the file's code
			return res, nil
		case m.kind == recEnd:
			res.problem = rr.corrupt(start, "end record in an incremental log")
			return res, nil
		case m.kind == recGroup:
			effs, st, reason, err := rr.group(m)
			if err != nil {
				return res, err
			}
			if st != recOK {
				res.problem = rr.corrupt(start, reason)
				res.torn = st == recTorn
				return res, nil
			}
			for i := range effs {
				if err := fn(&effs[i]); err != nil {
					return res, err
				}
				res.records++
			}
			clear(effs) // drop the group's values
			res.validLen = rr.off
			continue
		}
		if err := fn(&e); err != nil {
			return res, err
		}
		res.records++
		res.validLen = rr.off
	}
}
