package rdb

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
)

// Version is the RDB version Encode writes in the footer: Redis 7.0's,
// so that redis-server 7.0 and later accept the payloads.
const Version = 10

// maxVersion is the newest RDB version Decode accepts (Redis 7.2 writes
// 11, 7.4 writes 12; the value encodings read here did not change).
const maxVersion = 12

// Type is the Redis type of a value.
type Type uint8

// The types a payload may hold.
const (
	String Type = iota + 1
	List
	Set
	ZSet
	Hash
	TypeStream // (named apart from the Stream value it holds)
)

// ZMember is one member of a sorted set.
type ZMember struct {
	Member []byte
	Score  float64
}

// Value is one decoded value. Exactly the field of its Type is set:
// Str (String), Elems (List: in order; Set: members), Pairs (Hash: field,
// value), ZMembers (ZSet) or Stream (TypeStream). Byte slices may alias
// the payload.
type Value struct {
	Type     Type
	Str      []byte
	Elems    [][]byte
	Pairs    [][2][]byte
	ZMembers []ZMember
	Stream   *Stream
}

// ErrChecksum is Decode's error for a payload whose footer is wrong: too
// short, an RDB version newer than maxVersion, or a checksum mismatch
// (Redis: "DUMP payload version or checksum are wrong").
var ErrChecksum = errors.New("rdb: DUMP payload version or checksum are wrong")

// ErrFormat wraps Decode's errors for a payload whose footer is right but
// whose value cannot be read (Redis: "Bad data format").
var ErrFormat = errors.New("rdb: bad data format")

// RDB type bytes.
const (
	typeString         = 0
	typeList           = 1
	typeSet            = 2
	typeZSet           = 3
	typeHash           = 4
	typeZSet2          = 5
	typeListZiplist    = 10
	typeSetIntset      = 11
	typeZSetZiplist    = 12
	typeHashZiplist    = 13
	typeListQuicklist  = 14
	typeHashListpack   = 16
	typeZSetListpack   = 17
	typeListQuicklist2 = 18
	typeSetListpack    = 20
)

// CheckFooter verifies payload's RDB version and checksum and returns the
// serialized value before the footer.
func CheckFooter(payload []byte) ([]byte, error) {
	if len(payload) < 10 {
		return nil, ErrChecksum
	}
	n := len(payload) - 10
	ver := binary.LittleEndian.Uint16(payload[n:])
	if ver > maxVersion {
		return nil, ErrChecksum
	}
	if crc64Jones(payload[:n+2]) != binary.LittleEndian.Uint64(payload[n+2:]) {
		return nil, ErrChecksum
	}
	return payload[:n], nil
}

// Decode reads a DUMP payload. Bytes after the value (before the footer)
// are ignored, as Redis does.
func Decode(payload []byte) (Value, error) {
	body, err := CheckFooter(payload)
	if err != nil {
		return Value{}, err
	}
	r := &reader{b: body}
	v, err := r.value()
	if err != nil {
		return Value{}, fmt.Errorf("%w: %v", ErrFormat, err)
	}
	return v, nil
}

// reader reads RDB encodings from b; every read checks the bytes left.
type reader struct {
	b []byte
}

var errShort = errors.New("truncated")

func (r *reader) byte() (byte, error) {
	if len(r.b) == 0 {
		return 0, errShort
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c, nil
}

func (r *reader) take(n uint64) ([]byte, error) {
	if n > uint64(len(r.b)) {
		return nil, errShort
	}
	p := r.b[:n:n]
	r.b = r.b[n:]
	return p, nil
}

// length reads an RDB length; encoded reports the special string
// encodings (int8/16/32, LZF), whose kind is then in n.
func (r *reader) length() (n uint64, encoded bool, err error) {
	c, err := r.byte()
	if err != nil {
		return 0, false, err
	}
	switch c >> 6 {
	case 0:
		return uint64(c & 0x3f), false, nil
	case 1:
		d, err := r.byte()
		return uint64(c&0x3f)<<8 | uint64(d), false, err
	case 3:
		return uint64(c & 0x3f), true, nil
	}
	switch c {
	case 0x80:
		p, err := r.take(4)
		if err != nil {
			return 0, false, err
		}
		return uint64(binary.BigEndian.Uint32(p)), false, nil
	case 0x81:
		p, err := r.take(8)
		if err != nil {
			return 0, false, err
		}
		return binary.BigEndian.Uint64(p), false, nil
	}
	return 0, false, fmt.Errorf("unknown length encoding %#x", c)
}

// count reads a length that counts items of at least min bytes each, and
// refuses one the bytes left cannot hold.
func (r *reader) count(min int) (int, error) {
	n, enc, err := r.length()
	if err != nil {
		return 0, err
	}
	if enc || n > uint64(len(r.b)/min) {
		return 0, errors.New("bad count")
	}
	return int(n), nil
}

// str reads an RDB string: plain, an integer encoding, or LZF.
func (r *reader) str() ([]byte, error) {
	n, enc, err := r.length()
	if err != nil {
		return nil, err
	}
	if !enc {
		return r.take(n)
	}
	switch n {
	case 0:
		p, err := r.take(1)
		if err != nil {
			return nil, err
		}
		return strconv.AppendInt(nil, int64(int8(p[0])), 10), nil
	case 1:
		p, err := r.take(2)
		if err != nil {
			return nil, err
		}
		return strconv.AppendInt(nil, int64(int16(binary.LittleEndian.Uint16(p))), 10), nil
	case 2:
		p, err := r.take(4)
		if err != nil {
			return nil, err
		}
		return strconv.AppendInt(nil, int64(int32(binary.LittleEndian.Uint32(p))), 10), nil
	case 3:
		clen, enc1, err := r.length()
		if err != nil {
			return nil, err
		}
		ulen, enc2, err := r.length()
		if err != nil {
			return nil, err
		}
		if enc1 || enc2 {
			return nil, errors.New("bad LZF lengths")
		}
		in, err := r.take(clen)
		if err != nil {
			return nil, err
		}
		return lzfDecompress(in, ulen)
	}
	return nil, fmt.Errorf("unknown string encoding %d", n)
}

// value reads a type byte and the value after it.
func (r *reader) value() (Value, error) {
	t, err := r.byte()
	if err != nil {
		return Value{}, err
	}
	switch t {
	case typeString:
		s, err := r.str()
		return Value{Type: String, Str: s}, err
	case typeList, typeSet:
		n, err := r.count(1)
		if err != nil {
			return Value{}, err
		}
		v := Value{Type: List, Elems: make([][]byte, 0, n)}
		if t == typeSet {
			v.Type = Set
		}
		for range n {
			s, err := r.str()
			if err != nil {
				return Value{}, err
			}
			v.Elems = append(v.Elems, s)
		}
		return v, checkNonEmpty(v, t == typeSet)
	case typeZSet, typeZSet2:
		n, err := r.count(2)
		if err != nil {
			return Value{}, err
		}
		v := Value{Type: ZSet, ZMembers: make([]ZMember, 0, n)}
		for range n {
			m, err := r.str()
			if err != nil {
				return Value{}, err
			}
			var sc float64
			if t == typeZSet2 {
				p, err := r.take(8)
				if err != nil {
					return Value{}, err
				}
				sc = math.Float64frombits(binary.LittleEndian.Uint64(p))
			} else if sc, err = r.oldDouble(); err != nil {
				return Value{}, err
			}
			if math.IsNaN(sc) {
				return Value{}, errors.New("NaN score")
			}
			v.ZMembers = append(v.ZMembers, ZMember{Member: m, Score: sc})
		}
		return v, checkNonEmpty(v, true)
	case typeHash:
		n, err := r.count(2)
		if err != nil {
			return Value{}, err
		}
		v := Value{Type: Hash, Pairs: make([][2][]byte, 0, n)}
		for range n {
			f, err := r.str()
			if err != nil {
				return Value{}, err
			}
			val, err := r.str()
			if err != nil {
				return Value{}, err
			}
			v.Pairs = append(v.Pairs, [2][]byte{f, val})
		}
		return v, checkNonEmpty(v, true)
	case typeSetIntset:
		blob, err := r.str()
		if err != nil {
			return Value{}, err
		}
		members, err := intsetMembers(blob)
		if err != nil {
			return Value{}, err
		}
		v := Value{Type: Set, Elems: members}
		return v, checkNonEmpty(v, true)
	case typeListZiplist, typeZSetZiplist, typeHashZiplist, typeHashListpack, typeZSetListpack, typeSetListpack:
		blob, err := r.str()
		if err != nil {
			return Value{}, err
		}
		var items [][]byte
		if t == typeListZiplist || t == typeZSetZiplist || t == typeHashZiplist {
			items, err = ziplistItems(blob)
		} else {
			items, err = listpackItems(blob)
		}
		if err != nil {
			return Value{}, err
		}
		return fromFlat(t, items)
	case typeListQuicklist, typeListQuicklist2:
		nodes, err := r.count(1)
		if err != nil {
			return Value{}, err
		}
		v := Value{Type: List}
		for range nodes {
			container := uint64(2) // packed
			if t == typeListQuicklist2 {
				var enc bool
				if container, enc, err = r.length(); err != nil || enc || container < 1 || container > 2 {
					return Value{}, errors.New("bad quicklist container")
				}
			}
			blob, err := r.str()
			if err != nil {
				return Value{}, err
			}
			if container == 1 { // plain: one element
				v.Elems = append(v.Elems, blob)
				continue
			}
			var items [][]byte
			if t == typeListQuicklist {
				items, err = ziplistItems(blob)
			} else {
				items, err = listpackItems(blob)
			}
			if err != nil {
				return Value{}, err
			}
			if len(items) == 0 {
				return Value{}, errors.New("empty quicklist node")
			}
			v.Elems = append(v.Elems, items...)
		}
		return v, checkNonEmpty(v, false)
	case typeStreamListpacks, typeStreamListpacks2, typeStreamListpacks3:
		return r.stream(t)
	}
	return Value{}, fmt.Errorf("unsupported RDB type %d", t)
}

// oldDouble reads the string form of a score (RDB_TYPE_ZSET): a length
// byte (253 NaN, 254 +inf, 255 -inf), then that many ASCII bytes.
func (r *reader) oldDouble() (float64, error) {
	n, err := r.byte()
	if err != nil {
		return 0, err
	}
	switch n {
	case 253:
		return math.NaN(), nil
	case 254:
		return math.Inf(1), nil
	case 255:
		return math.Inf(-1), nil
	}
	p, err := r.take(uint64(n))
	if err != nil {
		return 0, err
	}
	f, err := strconv.ParseFloat(string(p), 64)
	if err != nil {
		return 0, errors.New("bad score")
	}
	return f, nil
}

// fromFlat builds a value from the items of a ziplist or listpack.
func fromFlat(t byte, items [][]byte) (Value, error) {
	switch t {
	case typeListZiplist:
		v := Value{Type: List, Elems: items}
		return v, checkNonEmpty(v, false)
	case typeSetListpack:
		v := Value{Type: Set, Elems: items}
		return v, checkNonEmpty(v, true)
	}
	if len(items)%2 != 0 {
		return Value{}, errors.New("odd number of items")
	}
	if t == typeHashZiplist || t == typeHashListpack {
		v := Value{Type: Hash, Pairs: make([][2][]byte, 0, len(items)/2)}
		for i := 0; i < len(items); i += 2 {
			v.Pairs = append(v.Pairs, [2][]byte{items[i], items[i+1]})
		}
		return v, checkNonEmpty(v, true)
	}
	v := Value{Type: ZSet, ZMembers: make([]ZMember, 0, len(items)/2)}
	for i := 0; i < len(items); i += 2 {
		sc, err := strconv.ParseFloat(string(items[i+1]), 64)
		if err != nil && !isRangeErr(err) || math.IsNaN(sc) {
			return Value{}, errors.New("bad score")
		}
		v.ZMembers = append(v.ZMembers, ZMember{Member: items[i], Score: sc})
	}
	return v, checkNonEmpty(v, true)
}

func isRangeErr(err error) bool {
	var ne *strconv.NumError
	return errors.As(err, &ne) && ne.Err == strconv.ErrRange
}

// checkNonEmpty refuses an empty collection (Redis never writes one) and,
// when unique, a member, field or set element named twice.
func checkNonEmpty(v Value, unique bool) error {
	var names [][]byte
	switch v.Type {
	case List, Set:
		names = v.Elems
	case Hash:
		for _, p := range v.Pairs {
			names = append(names, p[0])
		}
	case ZSet:
		for _, m := range v.ZMembers {
			names = append(names, m.Member)
		}
	}
	if len(names) == 0 {
		return errors.New("empty value")
	}
	if unique {
		seen := make(map[string]struct{}, len(names))
		for _, n := range names {
			if _, dup := seen[string(n)]; dup {
				return errors.New("duplicate member")
			}
			seen[string(n)] = struct{}{}
		}
	}
	return nil
}
