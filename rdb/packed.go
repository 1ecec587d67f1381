package rdb

import (
	"encoding/binary"
	"errors"
	"strconv"
)

// intsetMembers reads an intset: encoding (2, 4 or 8 bytes per integer),
// count, then the integers, little endian, in ascending order.
func intsetMembers(b []byte) ([][]byte, error) {
	if len(b) < 8 {
		return nil, errors.New("short intset")
	}
	w := binary.LittleEndian.Uint32(b)
	n := binary.LittleEndian.Uint32(b[4:])
	b = b[8:]
	if w != 2 && w != 4 && w != 8 || uint64(n)*uint64(w) != uint64(len(b)) {
		return nil, errors.New("bad intset")
	}
	out := make([][]byte, 0, n)
	var prev int64
	for i := 0; i < int(n); i++ {
		var v int64
		switch w {
		case 2:
			v = int64(int16(binary.LittleEndian.Uint16(b[i*2:])))
		case 4:
			v = int64(int32(binary.LittleEndian.Uint32(b[i*4:])))
		default:
			v = int64(binary.LittleEndian.Uint64(b[i*8:]))
		}
		if i > 0 && v <= prev {
			return nil, errors.New("intset out of order")
		}
		prev = v
		out = append(out, strconv.AppendInt(nil, v, 10))
	}
	return out, nil
}

// ziplistItems reads a ziplist: total bytes (4), tail offset (4), count
// (2), entries, 0xFF. Each entry is its previous entry's length (1 byte,
// or 0xFE and 4 bytes), an encoding and the data.
func ziplistItems(b []byte) ([][]byte, error) {
	if len(b) < 11 || int(binary.LittleEndian.Uint32(b)) != len(b) || b[len(b)-1] != 0xff {
		return nil, errors.New("bad ziplist header")
	}
	p := b[10 : len(b)-1]
	var out [][]byte
	for len(p) > 0 {
		if p[0] == 0xfe {
			if len(p) < 5 {
				return nil, errShort
			}
			p = p[5:]
		} else {
			p = p[1:]
		}
		if len(p) == 0 {
			return nil, errShort
		}
		c := p[0]
		var item []byte
		var n uint64
		switch {
		case c>>6 == 0:
			n, p = uint64(c&0x3f), p[1:]
		case c>>6 == 1:
			if len(p) < 2 {
				return nil, errShort
			}
			n, p = uint64(c&0x3f)<<8|uint64(p[1]), p[2:]
		case c == 0x80:
			if len(p) < 5 {
				return nil, errShort
			}
			n, p = uint64(binary.BigEndian.Uint32(p[1:])), p[5:]
		default:
			v, size, err := zipInt(c, p[1:])
			if err != nil {
				return nil, err
			}
			out = append(out, strconv.AppendInt(nil, v, 10))
			p = p[1+size:]
			continue
		}
		if n > uint64(len(p)) {
			return nil, errShort
		}
		item, p = p[:n:n], p[n:]
		out = append(out, item)
	}
	return out, nil
}

// zipInt reads the integer of a ziplist entry with encoding byte c.
func zipInt(c byte, p []byte) (v int64, size int, err error) {
	switch {
	case c == 0xc0:
		size = 2
	case c == 0xd0:
		size = 4
	case c == 0xe0:
		size = 8
	case c == 0xf0:
		size = 3
	case c == 0xfe:
		size = 1
	case c >= 0xf1 && c <= 0xfd:
		return int64(c&0x0f) - 1, 0, nil
	default:
		return 0, 0, errors.New("bad ziplist encoding")
	}
	if len(p) < size {
		return 0, 0, errShort
	}
	switch size {
	case 1:
		v = int64(int8(p[0]))
	case 2:
		v = int64(int16(binary.LittleEndian.Uint16(p)))
	case 3:
		v = int64(int32(uint32(p[0])<<8|uint32(p[1])<<16|uint32(p[2])<<24) >> 8)
	case 4:
		v = int64(int32(binary.LittleEndian.Uint32(p)))
	case 8:
		v = int64(binary.LittleEndian.Uint64(p))
	}
	return v, size, nil
}

// listpackItems reads a listpack: total bytes (4), count (2), entries,
// 0xFF. Each entry is an encoding, its data and its length backwards
// (1 to 5 bytes).
func listpackItems(b []byte) ([][]byte, error) {
	if len(b) < 7 || int(binary.LittleEndian.Uint32(b)) != len(b) || b[len(b)-1] != 0xff {
		return nil, errors.New("bad listpack header")
	}
	p := b[6 : len(b)-1]
	var out [][]byte
	for len(p) > 0 {
		c := p[0]
		var (
			head  int    // bytes of encoding
			n     uint64 // bytes of string data
			v     int64
			isInt bool
		)
		switch {
		case c&0x80 == 0:
			head, v, isInt = 1, int64(c&0x7f), true
		case c&0xc0 == 0x80:
			head, n = 1, uint64(c&0x3f)
		case c&0xe0 == 0xc0:
			if len(p) < 2 {
				return nil, errShort
			}
			u := uint64(c&0x1f)<<8 | uint64(p[1])
			head, v, isInt = 2, int64(u), true
			if u >= 1<<12 {
				v = int64(u) - 1<<13
			}
		case c&0xf0 == 0xe0:
			if len(p) < 2 {
				return nil, errShort
			}
			head, n = 2, uint64(c&0x0f)<<8|uint64(p[1])
		case c == 0xf0:
			if len(p) < 5 {
				return nil, errShort
			}
			head, n = 5, uint64(binary.LittleEndian.Uint32(p[1:]))
		case c >= 0xf1 && c <= 0xf4:
			size := [...]int{2, 3, 4, 8}[c-0xf1]
			if len(p) < 1+size {
				return nil, errShort
			}
			var u uint64
			for i := size - 1; i >= 0; i-- {
				u = u<<8 | uint64(p[1+i])
			}
			shift := 64 - 8*uint(size)
			head, v, isInt = 1+size, int64(u<<shift)>>shift, true
		default:
			return nil, errors.New("bad listpack encoding")
		}
		entry := uint64(head) + n
		if entry > uint64(len(p)) {
			return nil, errShort
		}
		if isInt {
			out = append(out, strconv.AppendInt(nil, v, 10))
		} else {
			out = append(out, p[head:entry:entry])
		}
		p = p[entry:]
		back := backlenSize(entry)
		if len(p) < back {
			return nil, errShort
		}
		p = p[back:]
	}
	return out, nil
}

// backlenSize is the bytes a listpack entry of n bytes stores its length in.
func backlenSize(n uint64) int {
	switch {
	case n <= 127:
		return 1
	case n < 16383:
		return 2
	case n < 2097151:
		return 3
	case n < 268435455:
		return 4
	}
	return 5
}

// lzfDecompress expands LZF data (as liblzf writes it) to exactly ulen
// bytes: control bytes below 32 start a literal run of control+1 bytes;
// others copy (control>>5)+2 bytes (7 means one more length byte follows)
// from an offset back in the output.
func lzfDecompress(in []byte, ulen uint64) ([]byte, error) {
	// One 3-byte back reference yields at most 264 bytes: a length past
	// 88 times the input is a lie, and is not allocated up front either
	// (the output grows as it is produced).
	if ulen > uint64(len(in))*88+64 {
		return nil, errors.New("bad LZF length")
	}
	out := make([]byte, 0, min(ulen, uint64(len(in))*4+64))
	for i := 0; i < len(in); {
		ctrl := int(in[i])
		i++
		if ctrl < 32 {
			n := ctrl + 1
			if i+n > len(in) || uint64(len(out)+n) > ulen {
				return nil, errors.New("bad LZF literal")
			}
			out = append(out, in[i:i+n]...)
			i += n
			continue
		}
		n := ctrl >> 5
		if n == 7 {
			if i >= len(in) {
				return nil, errShort
			}
			n += int(in[i])
			i++
		}
		if i >= len(in) {
			return nil, errShort
		}
		back := (ctrl&0x1f)<<8 + int(in[i]) + 1
		i++
		n += 2
		if back > len(out) || uint64(len(out)+n) > ulen {
			return nil, errors.New("bad LZF reference")
		}
		from := len(out) - back
		for j := 0; j < n; j++ { // byte by byte: the source may overlap
			out = append(out, out[from+j])
		}
	}
	if uint64(len(out)) != ulen {
		return nil, errors.New("bad LZF length")
	}
	return out, nil
}
