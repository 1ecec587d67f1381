package rdb

import (
	"encoding/binary"
	"math"
	"strconv"
)

// Encoder builds a DUMP payload in the plain encodings: Begin with the
// value's type, the elements, then Finish.
type Encoder struct {
	b []byte
}

// String returns the payload of a string value.
func EncodeString(s []byte) []byte {
	var e Encoder
	e.b = append(e.b, typeString)
	e.Str(s)
	return e.Finish()
}

// Begin starts a collection payload of type t with n entries (elements,
// members, or field-value pairs).
func (e *Encoder) Begin(t Type, n int) {
	e.b = e.b[:0]
	switch t {
	case List:
		e.b = append(e.b, typeList)
	case Set:
		e.b = append(e.b, typeSet)
	case ZSet:
		e.b = append(e.b, typeZSet2)
	case Hash:
		e.b = append(e.b, typeHash)
	default:
		e.b = append(e.b, typeString)
		return
	}
	e.length(uint64(n))
}

// Str appends a string: an integer that fits 32 bits in the integer
// encoding (as Redis writes it), anything else plain.
func (e *Encoder) Str(s []byte) {
	if len(s) <= 11 {
		if v, err := strconv.ParseInt(string(s), 10, 64); err == nil && strconv.FormatInt(v, 10) == string(s) {
			switch {
			case v >= math.MinInt8 && v <= math.MaxInt8:
				e.b = append(e.b, 0xc0, byte(v))
				return
			case v >= math.MinInt16 && v <= math.MaxInt16:
				e.b = append(e.b, 0xc1)
				e.b = binary.LittleEndian.AppendUint16(e.b, uint16(v))
				return
			case v >= math.MinInt32 && v <= math.MaxInt32:
				e.b = append(e.b, 0xc2)
				e.b = binary.LittleEndian.AppendUint32(e.b, uint32(v))
				return
			}
		}
	}
	e.length(uint64(len(s)))
	e.b = append(e.b, s...)
}

// Score appends a sorted-set score (binary double).
func (e *Encoder) Score(f float64) {
	e.b = binary.LittleEndian.AppendUint64(e.b, math.Float64bits(f))
}

func (e *Encoder) length(n uint64) {
	switch {
	case n < 1<<6:
		e.b = append(e.b, byte(n))
	case n < 1<<14:
		e.b = append(e.b, byte(n>>8)|0x40, byte(n))
	case n <= math.MaxUint32:
		e.b = append(e.b, 0x80)
		e.b = binary.BigEndian.AppendUint32(e.b, uint32(n))
	default:
		e.b = append(e.b, 0x81)
		e.b = binary.BigEndian.AppendUint64(e.b, n)
	}
}

// Finish appends the footer and returns the payload.
func (e *Encoder) Finish() []byte {
	e.b = binary.LittleEndian.AppendUint16(e.b, Version)
	e.b = binary.LittleEndian.AppendUint64(e.b, crc64Jones(e.b))
	return e.b
}
