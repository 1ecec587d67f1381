package lualib

import (
	"math"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// The struct library as Redis builds it on 64-bit Linux: native order is
// little endian, short 2, int 4, long and size_t 8 bytes, the default
// maximum alignment ("!" without a number) 8, integers at most 32 bytes.
// Integers are computed in 64 bits (C long), so bytes beyond the eighth of
// a wider integer are zero when packing (even for negative numbers) and
// shift out when unpacking.
const (
	structMaxIntSize = 32
	structMaxAlign   = 8
)

// OpenStruct registers the global struct of L.
func OpenStruct(L *lua.LState) {
	L.SetGlobal("struct", newModule(L, map[string]lua.LGFunction{
		"pack":   structPack,
		"unpack": structUnpack,
		"size":   structSize,
	}))
}

// structFormat walks a format string, keeping the byte order and alignment
// that its control options set.
type structFormat struct {
	L      *lua.LState
	fmt    string
	pos    int
	little bool
	align  int
}

func newStructFormat(L *lua.LState, format string) *structFormat {
	// The format is a C string: it ends at its first NUL byte.
	if i := strings.IndexByte(format, 0); i >= 0 {
		format = format[:i]
	}
	return &structFormat{L: L, fmt: format, little: true, align: 1}
}

func (f *structFormat) more() bool { return f.pos < len(f.fmt) }

func (f *structFormat) nextOption() byte {
	c := f.fmt[f.pos]
	f.pos++
	return c
}

// number reads an optional decimal count, def when there is none.
func (f *structFormat) number(def int) int {
	if !f.more() || !isDigit(f.fmt[f.pos]) {
		return def
	}
	a := 0
	for f.more() && isDigit(f.fmt[f.pos]) {
		d := int(f.fmt[f.pos] - '0')
		if a > math.MaxInt32/10 || a*10 > math.MaxInt32-d {
			raise(f.L, "integral size overflow")
		}
		a = a*10 + d
		f.pos++
	}
	return a
}

// size is the size of option opt, reading its count ("c", "i", "I").
func (f *structFormat) size(opt byte) int {
	switch opt {
	case 'b', 'B', 'x':
		return 1
	case 'h', 'H':
		return 2
	case 'f':
		return 4
	case 'l', 'L', 'T', 'd':
		return 8
	case 'c':
		return f.number(1)
	case 'i', 'I':
		n := f.number(4)
		if n > structMaxIntSize {
			raisef(f.L, "integral size %d is larger than limit of %d", n, structMaxIntSize)
		}
		return n
	}
	return 0
}

// toAlign is the padding before an element of size at offset pos.
func (f *structFormat) toAlign(pos uint64, opt byte, size uint64) uint64 {
	if size == 0 || opt == 'c' {
		return 0
	}
	if size > uint64(f.align) {
		size = uint64(f.align)
	}
	return (size - (pos & (size - 1))) & (size - 1)
}

// control handles the options that are not data: " ", "<", ">", "!n";
// anything else is an invalid option.
func (f *structFormat) control(opt byte) {
	switch opt {
	case ' ':
	case '<':
		f.little = true
	case '>':
		f.little = false
	case '!':
		a := f.number(structMaxAlign)
		if a <= 0 || a&(a-1) != 0 {
			raisef(f.L, "alignment %d is not a power of 2", a)
		}
		f.align = a
	default:
		argError(f.L, 1, "invalid format option '"+string([]byte{opt})+"'")
	}
}

func isIntOption(opt byte) bool {
	return strings.IndexByte("bBhHlLTiI", opt) >= 0
}

// structPack is struct.pack(format, ...).
func structPack(L *lua.LState) int {
	f := newStructFormat(L, checkString(L, 1))
	// The library pushes a nil to mark the end of its arguments, so a
	// missing first argument is reported as "got nil", later ones as "got
	// no value" (Lua's string buffer pushes pieces above the mark only
	// after 8 KiB of output, which is not imitated).
	L.Push(lua.LNil)
	arg := 2
	var out []byte
	for f.more() {
		opt := f.nextOption()
		size := f.size(opt)
		pad := f.toAlign(uint64(len(out)), opt, uint64(size))
		out = append(out, make([]byte, pad)...)
		switch {
		case isIntOption(opt):
			out = appendStructInt(out, checkNumber(L, arg), size, f.little)
			arg++
		case opt == 'x':
			out = append(out, 0)
		case opt == 'f':
			bits := uint64(math.Float32bits(float32(checkNumber(L, arg))))
			out = appendStructUint(out, bits, 4, f.little)
			arg++
		case opt == 'd':
			out = appendStructUint(out, math.Float64bits(checkNumber(L, arg)), 8, f.little)
			arg++
		case opt == 'c' || opt == 's':
			s := checkString(L, arg)
			arg++
			if size == 0 {
				size = len(s)
			}
			if len(s) < size {
				// The library names the argument after the string.
				argError(L, arg, "string too short")
			}
			out = append(out, s[:size]...)
			if opt == 's' {
				out = append(out, 0)
			}
		default:
			f.control(opt)
		}
	}
	L.Push(lua.LString(out))
	return 1
}

// appendStructInt writes n as a size-byte integer: negative numbers through
// C's (unsigned long)(long)n, others through (unsigned long)n.
func appendStructInt(out []byte, n float64, size int, little bool) []byte {
	var v uint64
	if n < 0 {
		v = uint64(truncInt64(n))
	} else {
		v = truncUint64(n)
	}
	return appendStructUint(out, v, size, little)
}

// appendStructUint writes the low size bytes of v (zeros past the eighth).
func appendStructUint(out []byte, v uint64, size int, little bool) []byte {
	b := make([]byte, size)
	for i := 0; i < size && i < 8; i++ {
		if little {
			b[i] = byte(v >> (8 * i))
		} else {
			b[size-1-i] = byte(v >> (8 * i))
		}
	}
	return append(out, b...)
}

// structUint reads a size-byte integer (only the last eight bytes read
// count, as they do in a 64-bit C long).
func structUint(b string, little bool) uint64 {
	var v uint64
	for i := range len(b) {
		c := b[i]
		if little {
			c = b[len(b)-1-i]
		}
		v = v<<8 | uint64(c)
	}
	return v
}

// structSigned sign-extends a size-byte integer the way the library does:
// its mask ~0 << (size*8 - 1) is a C shift whose count x86 takes modulo 64.
func structSigned(v uint64, size int) int64 {
	mask := ^uint64(0) << (uint(size*8-1) & 63)
	if v&mask != 0 {
		v |= mask
	}
	return int64(v)
}

// structUnpack is struct.unpack(format, data [, pos]): the values, then the
// position after them.
func structUnpack(L *lua.LState) int {
	f := newStructFormat(L, checkString(L, 1))
	data := checkString(L, 2)
	// The position is a C size_t: a negative one wraps to a huge one,
	// which passes the check for 0 and fails as too short later.
	pos := uint64(optInteger(L, 3, 1))
	if pos == 0 {
		argError(L, 3, "offset must be 1 or greater")
	}
	pos--
	ld := uint64(len(data))
	nargs := L.GetTop()
	var results []lua.LValue
	for f.more() {
		opt := f.nextOption()
		size := uint64(f.size(opt))
		pos += f.toAlign(pos, opt, size)
		if size > ld || pos > ld-size {
			argError(L, 2, "data string too short")
		}
		if nargs+len(results)+2 > luaMaxCStack {
			raise(L, "stack overflow (too many results)")
		}
		switch {
		case isIntOption(opt):
			v := structUint(data[pos:pos+size], f.little)
			if opt >= 'a' { // lower case: signed
				results = append(results, lua.LNumber(structSigned(v, int(size))))
			} else {
				results = append(results, lua.LNumber(v))
			}
		case opt == 'x':
		case opt == 'f':
			bits := uint32(structUint(data[pos:pos+4], f.little))
			results = append(results, lua.LNumber(math.Float32frombits(bits)))
		case opt == 'd':
			bits := structUint(data[pos:pos+8], f.little)
			results = append(results, lua.LNumber(math.Float64frombits(bits)))
		case opt == 'c':
			if size == 0 {
				size = structPreviousSize(L, &results)
				if size > ld || pos > ld-size {
					argError(L, 2, "data string too short")
				}
			}
			results = append(results, lua.LString(data[pos:pos+size]))
		case opt == 's':
			end := strings.IndexByte(data[pos:], 0)
			if end < 0 {
				raise(L, "unfinished string in data")
			}
			size = uint64(end) + 1
			results = append(results, lua.LString(data[pos:pos+uint64(end)]))
		default:
			f.control(opt)
		}
		pos += size
	}
	for _, v := range results {
		L.Push(v)
	}
	L.Push(lua.LNumber(int64(pos + 1)))
	return len(results) + 1
}

// structPreviousSize takes the last result as the length of a "c0" string
// and removes it, as the library does.
func structPreviousSize(L *lua.LState, results *[]lua.LValue) uint64 {
	n := len(*results)
	if n == 0 {
		raise(L, "format 'c0' needs a previous size")
	}
	f, ok := toNumber((*results)[n-1])
	if !ok {
		raise(L, "format 'c0' needs a previous size")
	}
	*results = (*results)[:n-1]
	return truncUint64(f) // size_t from the number, via a C cast
}

// structSize is struct.size(format): the bytes that pack would write.
func structSize(L *lua.LState) int {
	f := newStructFormat(L, checkString(L, 1))
	var pos uint64
	for f.more() {
		opt := f.nextOption()
		size := uint64(f.size(opt))
		pos += f.toAlign(pos, opt, size)
		switch {
		case opt == 's':
			argError(L, 1, "option 's' has no fixed size")
		case opt == 'c' && size == 0:
			argError(L, 1, "option 'c0' has no fixed size")
		}
		if !isAlnum(opt) {
			f.control(opt)
		}
		pos += size
	}
	L.Push(lua.LNumber(int64(pos)))
	return 1
}

func isAlnum(c byte) bool {
	return isDigit(c) || (c|0x20 >= 'a' && c|0x20 <= 'z')
}
