package persistence

// Groups (format version 3): the effects of one command, EXEC or script are
// one unit on disk. When a unit has more than one effect, its records are
// preceded by a GROUP record holding their count and their length in bytes
// (headers included). A reader applies a group only after reading and
// checking every record in it, so a crash in the middle of writing a unit
// loses the whole unit, never a part of it (FORMAT.md, "Groups").
//
// A unit of one effect has no GROUP record: the hot path (one effect per
// command) writes exactly what it wrote before groups existed.

import (
	"encoding/binary"
	"fmt"
	"io"
)

// appendGroupRecord appends the GROUP record of count records taking length
// bytes.
func appendGroupRecord(dst []byte, count, length uint64) []byte {
	start := len(dst)
	dst = append(dst, make([]byte, recHeaderLen)...)
	dst = append(dst, opcodeGroup)
	dst = binary.AppendUvarint(dst, count)
	dst = binary.AppendUvarint(dst, length)
	return sealRecord(dst, start)
}

// insertGroupRecord puts the GROUP record of the count records in
// buf[start:] in front of them. It allocates only when buf must grow (a
// scratch array for the record would escape: the checksum leaks it).
func insertGroupRecord(buf []byte, start, count int) []byte {
	end := len(buf)
	buf = appendGroupRecord(buf, uint64(count), uint64(end-start))
	n := len(buf) - end
	buf = append(buf, buf[end:end+n]...)     // a second copy, which the move below leaves alone
	copy(buf[start+n:end+n], buf[start:end]) // overwrites the first copy
	copy(buf[start:start+n], buf[end+n:])
	return buf[:end+n]
}

// decodeGroup decodes the body of a GROUP payload (after the op code). A
// group holds at least two records: a unit of one effect is written without
// a GROUP record.
func decodeGroup(p []byte) (recMeta, string) {
	count, k := binary.Uvarint(p)
	if k <= 0 || count < 2 {
		return recMeta{}, "bad record count in group record"
	}
	p = p[k:]
	length, k := binary.Uvarint(p)
	if k <= 0 || length/(recHeaderLen+1) < count { // a record takes 10 bytes at least
		return recMeta{}, "bad length in group record"
	}
	if k != len(p) {
		return recMeta{}, "trailing bytes in group record"
	}
	return recMeta{kind: recGroup, count: count, length: length}, ""
}

// group reads the records of the group whose GROUP record m the reader has
// just read, checks every one of them and decodes them into effects (whose
// byte slices alias a buffer reused by the next group), before anything is
// applied. On recTorn or recCorrupt, reason says what is wrong; the caller
// reports the problem at the GROUP record, which is where a torn group is
// cut off: a group is loaded whole or not at all.
//
// As for a single record (recReader.next and bad), the group is a torn tail
// when its length runs past the end of the file, or when one of its records
// fails a check and everything after the part of that record that was read
// is zero to the end of the file (a crash extended the file before all of
// the group reached the disk); any other failure is damage.
func (rr *recReader) group(m recMeta) (effs []Effect, st recStatus, reason string, err error) {
	if m.length > uint64(rr.size-rr.off) {
		return nil, recTorn, fmt.Sprintf("group of %d records runs past the end of the file", m.count), nil
	}
	first := rr.off // offset of the group's first record
	n := int(m.length)
	if cap(rr.gbuf) < n {
		rr.gbuf = make([]byte, n) // n is bounded by the file size
	}
	b := rr.gbuf[:n]
	if _, err := io.ReadFull(rr.r, b); err != nil {
		return nil, 0, "", rr.ioErr(err)
	}
	rr.off += int64(n)

	// fail classifies a failed check of the record at b[q:]: torn when
	// b[q+keep:] and the rest of the file are all zeros.
	fail := func(i uint64, q, keep int, why string) ([]Effect, recStatus, string, error) {
		why = fmt.Sprintf("record %d of the group of %d, at offset %d: %s", i+1, m.count, first+int64(q), why)
		if q+keep > len(b) || !allZero(b[q+keep:]) {
			return nil, recCorrupt, why, nil
		}
		zeros, err := rr.zerosToEnd()
		if err != nil {
			return nil, 0, "", err
		}
		if !zeros {
			return nil, recCorrupt, why, nil
		}
		return nil, recTorn, why + " followed by zeros to the end of the file", nil
	}

	effs = rr.effs[:0]
	q := 0
	for i := range m.count {
		rec := b[q:]
		if len(rec) < recHeaderLen {
			return fail(i, q, 0, "record header runs past the end of the group")
		}
		if crc8(rec[0:4]) != rec[4] {
			return fail(i, q, recHeaderLen, "record length checksum mismatch")
		}
		l := int64(binary.LittleEndian.Uint32(rec[0:4]))
		if l == 0 {
			return fail(i, q, recHeaderLen, "empty record")
		}
		if l > int64(len(rec)-recHeaderLen) {
			return fail(i, q, recHeaderLen, "record runs past the end of the group")
		}
		p := rec[recHeaderLen : recHeaderLen+l]
		if crc32c(p) != binary.LittleEndian.Uint32(rec[5:9]) {
			return fail(i, q, recHeaderLen+int(l), "record checksum mismatch")
		}
		effs = append(effs, Effect{})
		inner, why := decodePayload(p, &effs[len(effs)-1])
		if why == "" && inner.kind != recEffect {
			why = fmt.Sprintf("op %d inside a group", p[0])
		}
		if why != "" {
			return nil, recCorrupt, fmt.Sprintf("record %d of the group of %d, at offset %d: %s", i+1, m.count, first+int64(q), why), nil
		}
		q += recHeaderLen + int(l)
	}
	rr.effs = effs[:0] // keep the grown slice for the next group
	if q != len(b) {
		return nil, recCorrupt, fmt.Sprintf("the records of the group of %d end %d bytes before its length", m.count, len(b)-q), nil
	}
	return effs, recOK, "", nil
}
