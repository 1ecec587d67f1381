package persistence

// Streams: the same records as the files, for a replicated log (package
// cluster) that carries effects in its entries and dumps in its snapshots.
// An entry holds a sequence of framed records (AppendEffect, DecodeEffects);
// a snapshot holds a dump exactly as a snapshot file does (WriteDump,
// ReadDump), header and end record included, so a cut-short stream is
// detected.

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
)

// AppendEffect appends the framed record of e (header with checksums, then
// payload) to dst. It panics on an effect the format cannot represent.
func AppendEffect(dst []byte, e *Effect) []byte {
	checkEffect(e)
	return appendRecord(dst, e)
}

// DecodeEffects calls fn for each framed record of b, in order. The
// effect's Key, Entry.Str and Args alias b. A damaged or truncated record,
// or one that is not an effect, is an error.
func DecodeEffects(b []byte, fn func(*Effect) error) error {
	var e Effect
	for off := 0; off < len(b); {
		if len(b)-off < recHeaderLen {
			return fmt.Errorf("persistence: record header cut short at offset %d", off)
		}
		h := b[off : off+recHeaderLen]
		if crc8(h[0:4]) != h[4] {
			return fmt.Errorf("persistence: record length checksum mismatch at offset %d", off)
		}
		n := int(binary.LittleEndian.Uint32(h[0:4]))
		if n == 0 || n > len(b)-off-recHeaderLen {
			return fmt.Errorf("persistence: record at offset %d has length %d, %d bytes left", off, n, len(b)-off-recHeaderLen)
		}
		p := b[off+recHeaderLen : off+recHeaderLen+n]
		if crc32c(p) != binary.LittleEndian.Uint32(h[5:9]) {
			return fmt.Errorf("persistence: record checksum mismatch at offset %d", off)
		}
		e = Effect{}
		m, reason := decodePayload(p, &e)
		if reason != "" {
			return fmt.Errorf("persistence: record at offset %d: %s", off, reason)
		}
		if m.kind != recEffect {
			return fmt.Errorf("persistence: record at offset %d is not an effect", off)
		}
		if err := fn(&e); err != nil {
			return err
		}
		off += recHeaderLen + n
	}
	return nil
}

// WriteDump writes a dump of what dump emits to w (a header, one record per
// key, the end record) and returns the keys and bytes written. It neither
// syncs nor closes w.
func WriteDump(w io.Writer, dump DumpFunc) (keys, size int64, err error) {
	bw := bufio.NewWriterSize(w, 256<<10)
	d := &dumpWriter{w: bw}
	d.scratch = appendHeader(d.scratch[:0], FileDump)
	if err := d.write(d.scratch); err != nil {
		return 0, 0, err
	}
	if dump != nil {
		if err := dump(d.emit); err != nil {
			return 0, 0, err
		}
	}
	d.scratch = appendEndRecord(d.scratch[:0], d.keys)
	if err := d.write(d.scratch); err != nil {
		return 0, 0, err
	}
	if err := bw.Flush(); err != nil {
		return 0, 0, err
	}
	return d.keys, d.size, nil
}

// ReadDump reads a dump written by WriteDump from r, up to and including
// its end record, and calls apply for every key (key and e.Str are valid
// only during the call). A stream that ends before the end record, or
// whose end record disagrees with the keys read, is an error; nothing
// after the end record is read.
func ReadDump(r io.Reader, name string, apply EmitFunc) (LoadInfo, error) {
	rr := newRecReader(r, name, math.MaxInt64)
	t, ce, err := rr.header()
	if err != nil {
		return LoadInfo{}, err
	}
	if ce != nil {
		return LoadInfo{}, ce
	}
	if t != FileDump {
		return LoadInfo{}, rr.corrupt(0, fmt.Sprintf("stream type is %s, want %s", t, FileDump))
	}
	var (
		e    Effect
		info LoadInfo
	)
	for {
		p, start, st, reason, err := rr.next()
		if err != nil {
			return info, err
		}
		if st != recOK {
			return info, rr.corrupt(start, reason)
		}
		m, reason := decodePayload(p, &e)
		switch {
		case reason != "":
			return info, rr.corrupt(start, reason)
		case m.kind == recEnd:
			if m.count != uint64(info.Records) {
				return info, rr.corrupt(start, fmt.Sprintf("end record counts %d keys, the dump holds %d", m.count, info.Records))
			}
			info.Bytes = rr.off
			return info, nil
		case m.kind != recEffect || e.Op != OpSet:
			return info, rr.corrupt(start, fmt.Sprintf("op %d in a dump", p[0]))
		}
		if err := apply(e.DB, e.Key, e.Entry); err != nil {
			return info, err
		}
		info.Records++
	}
}
