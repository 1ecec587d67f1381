package server

import (
	"math/bits"

	"github.com/turnstile/turnstile/command"
	"github.com/turnstile/turnstile/resp"
	"github.com/turnstile/turnstile/shards"
)

// Bitmaps: string values read and written as bit arrays, bit 0 being the
// most significant bit of the first byte, as Redis 7.0's SETBIT, GETBIT,
// BITCOUNT, BITPOS, BITOP and BITFIELD (below). An integer
// value is its decimal text. Redis's order of checks is kept: arguments
// that need no key first, then the key's type, then the rest (BITCOUNT
// and BITPOS read the key before their range). SETBIT logs the one byte it
// changed (a range effect, as SETRANGE), BITOP the whole result.
func bitmapCommands() []*Command {
	one := func(c *Command) *Command {
		c.FirstKey, c.LastKey, c.Step, c.Group = 1, 1, 1, "bitmap"
		return c
	}
	return []*Command{
		one(&Command{Name: "setbit", Access: []command.KeyAccess{command.KeyReadWrite}, Docs: "key:key offset:integer value:integer", Arity: 4, Flags: command.Write | command.DenyOOM | command.AddsKeys, Since: "2.2.0",
			Summary: "Sets or clears the bit at offset of the string value. Creates the key if it doesn't exist.", Handler: cmdSetBit}),
		one(&Command{Name: "getbit", Docs: "key:key offset:integer", Arity: 3, Flags: command.Readonly | command.Fast, Since: "2.2.0",
			Summary: "Returns a bit value by offset.", Handler: cmdGetBit}),
		one(&Command{Name: "bitcount", Docs: "key:key [range=(start:integer end:integer [unit=(BYTE|BIT)@7.0.0])]", Arity: -2, Flags: command.Readonly, Since: "2.6.0",
			Summary: "Counts the number of set bits (population counting) in a string.", Handler: cmdBitCount}),
		one(&Command{Name: "bitpos", Docs: "key:key bit:integer [range=(start:integer [end_unit_block=(end:integer [unit=(BYTE|BIT)@7.0.0])@2.8.7])]", Arity: -3, Flags: command.Readonly, Since: "2.8.7",
			Summary: "Finds the first set (1) or clear (0) bit in a string.", Handler: cmdBitPos}),
		{Name: "bitop", Access: []command.KeyAccess{command.KeyWrite, command.KeyRead}, Docs: "operation=(AND|OR|XOR|NOT) destkey:key key:key...", Arity: -4, Flags: command.Write | command.DenyOOM | command.AddsKeys, FirstKey: 2, LastKey: -1, Step: 1, Group: "bitmap", Since: "2.6.0",
			Summary: "Performs bitwise operations on multiple strings, and stores the result.", Handler: cmdBitOp},
	}
}

const (
	errBitOffset = "ERR bit offset is not an integer or out of range"
	errBitValue  = "ERR bit is not an integer or out of range"
)

// bitOffset parses a bit offset: a non-negative integer whose byte lies
// within proto-max-bulk-len.
func bitOffset(x *Ctx, b []byte) (int64, bool) {
	n, ok := resp.ParseInt(b)
	if !ok || n < 0 || n>>3 >= maxStringLen(x) {
		x.w.Error(errBitOffset)
		return 0, false
	}
	return n, true
}

// bitOf returns bit i (0: the first byte's most significant bit) of s.
func bitOf(s []byte, i int64) int {
	if i>>3 >= int64(len(s)) {
		return 0
	}
	return int(s[i>>3]>>(7-uint(i&7))) & 1
}

// cmdSetBit implements SETBIT key offset value: the bit's old value. A
// change (or growth) stores a new value and logs the changed byte alone;
// setting a bit to what it is changes nothing.
func cmdSetBit(x *Ctx) {
	key := x.args[1]
	off, ok := bitOffset(x, x.args[2])
	if !ok {
		return
	}
	on, ok := resp.ParseInt(x.args[3])
	if !ok || on&^1 != 0 {
		x.w.Error(errBitValue)
		return
	}
	var buf [20]byte
	e, cur, found, ok := readBits(x, key, buf[:0])
	if !ok {
		return
	}
	old := bitOf(cur, off)
	at := off >> 3
	x.w.Int(int64(old))
	if found && at < int64(len(cur)) && int64(old) == on {
		return // no change, no growth
	}
	b := make([]byte, max(int64(len(cur)), at+1)) // a new value: stored values are immutable
	copy(b, cur)
	mask := byte(1) << (7 - uint(off&7))
	if on == 1 {
		b[at] |= mask
	} else {
		b[at] &^= mask
	}
	x.storeRange(key, e, found, b, at, b[at:at+1])
}

// cmdGetBit implements GETBIT key offset.
func cmdGetBit(x *Ctx) {
	off, ok := bitOffset(x, x.args[2])
	if !ok {
		return
	}
	var buf [20]byte
	_, s, _, ok := readBits(x, x.args[1], buf[:0])
	if ok {
		x.w.Int(int64(bitOf(s, off))) // no key: no bits set
	}
}

// stringBytes is a string entry's value: its bytes, or an integer's
// decimal text appended to buf.
func stringBytes(e shards.Entry, buf []byte) []byte {
	if e.Kind == shards.KindInt {
		return e.AppendString(buf)
	}
	return e.Str
}

// readBits reads key's string entry and its value for a bit command
// (stringBytes, in buf for an integer): found is false for no key, ok
// false after a WRONGTYPE reply.
func readBits(x *Ctx, key, buf []byte) (e shards.Entry, s []byte, found, ok bool) {
	e, found, ok = getString(x, key)
	if !ok || !found {
		return e, nil, found, ok
	}
	return e, stringBytes(e, buf), true, true
}

// bitRange parses the range arguments of BITCOUNT (start end [unit]) and
// BITPOS (start [end [unit]]) for a value of n bytes, as Redis 7.0 does:
// BITCOUNT reads start, end, then the unit, BITPOS start, the unit, then
// end; negative indexes count from the end, the range is clamped to the
// value, and BITCOUNT's range is empty at once for a negative start past
// a negative end. It returns the bit range [lo, hi] (in BYTE units whole
// bytes; lo > hi when empty); endGiven reports whether an end was given.
// ok is false after an error reply.
func bitRange(x *Ctx, args [][]byte, n int64, bitpos bool) (lo, hi int64, endGiven, ok bool) {
	fail := func(err string) (int64, int64, bool, bool) {
		x.w.Error(err)
		return 0, 0, false, false
	}
	start, okStart := resp.ParseInt(args[0])
	if !okStart {
		return fail(errNotInt)
	}
	var end int64
	parseEnd := func() bool {
		if len(args) < 2 {
			return true
		}
		var okEnd bool
		end, okEnd = resp.ParseInt(args[1])
		endGiven = true
		return okEnd
	}
	if !bitpos && !parseEnd() {
		return fail(errNotInt)
	}
	if !bitpos && start < 0 && end < 0 && start > end {
		return 0, -1, endGiven, true // before the unit is read, as in Redis
	}
	isBit := false
	if len(args) == 3 {
		switch {
		case isKeyword(args[2], "bit"):
			isBit = true
		case isKeyword(args[2], "byte"):
		default:
			return fail(errSyntax)
		}
	}
	if bitpos && !parseEnd() {
		return fail(errNotInt)
	}
	total := n
	if isBit {
		total = n << 3
	}
	if !endGiven {
		end = total - 1
	}
	if start < 0 {
		start += total
	}
	if end < 0 {
		end += total
	}
	start, end = max(start, 0), max(end, 0)
	if end >= total {
		end = total - 1
	}
	if start > end {
		return 0, -1, endGiven, true
	}
	if !isBit {
		return start << 3, end<<3 | 7, endGiven, true
	}
	return start, end, endGiven, true
}

// cmdBitCount implements BITCOUNT key [start end [BYTE|BIT]].
func cmdBitCount(x *Ctx) {
	var buf [20]byte
	_, s, found, ok := readBits(x, x.args[1], buf[:0])
	if !ok {
		return
	}
	if !found {
		x.w.Int(0)
		return
	}
	lo, hi := int64(0), int64(len(s))<<3-1
	switch len(x.args) {
	case 2:
	case 4, 5:
		if lo, hi, _, ok = bitRange(x, x.args[2:], int64(len(s)), false); !ok {
			return
		}
	default:
		x.w.Error(errSyntax)
		return
	}
	x.w.Int(popcountRange(s, lo, hi))
}

// popcountRange counts the set bits of s in the bit range [lo, hi].
func popcountRange(s []byte, lo, hi int64) int64 {
	if lo > hi {
		return 0
	}
	first, last := lo>>3, hi>>3
	var n int
	for _, b := range s[first : last+1] {
		n += bits.OnesCount8(b)
	}
	n -= bits.OnesCount8(s[first] & ^(byte(0xff) >> uint(lo&7))) // bits before lo
	n -= bits.OnesCount8(s[last] & (byte(0xff) >> uint(hi&7+1))) // bits after hi
	return int64(n)
}

// cmdBitPos implements BITPOS key bit [start [end [BYTE|BIT]]]: the first
// bit equal to bit in the range; when none is, -1, except that a search
// for a 0 without an end finds the first bit past the value (a missing key
// is all zeros).
func cmdBitPos(x *Ctx) {
	want, ok := resp.ParseInt(x.args[2])
	switch {
	case !ok:
		x.w.Error(errNotInt)
		return
	case want != 0 && want != 1:
		x.w.Error("ERR The bit argument must be 1 or 0.")
		return
	}
	var buf [20]byte
	_, s, found, ok := readBits(x, x.args[1], buf[:0])
	if !ok {
		return
	}
	if !found {
		x.w.Int(-want)
		return
	}
	lo, hi, endGiven := int64(0), int64(len(s))<<3-1, false
	switch len(x.args) {
	case 3:
	case 4, 5, 6:
		if lo, hi, endGiven, ok = bitRange(x, x.args[3:], int64(len(s)), true); !ok {
			return
		}
	default:
		x.w.Error(errSyntax)
		return
	}
	if lo > hi { // an empty range, or an empty value
		x.w.Int(-1)
		return
	}
	for i := lo; i <= hi; i++ {
		if i&7 == 0 && i+7 <= hi { // a whole byte at once
			if b := s[i>>3]; (want == 1 && b == 0) || (want == 0 && b == 0xff) {
				i += 7
				continue
			}
		}
		if int64(bitOf(s, i)) == want {
			x.w.Int(i)
			return
		}
	}
	if want == 0 && !endGiven {
		x.w.Int(hi + 1)
		return
	}
	x.w.Int(-1)
}

// cmdBitOp implements BITOP AND|OR|XOR|NOT destkey key [key ...]: the
// result is as long as the longest input (shorter ones and missing keys
// count as zeros), stored without expiry; an empty result deletes destkey.
func cmdBitOp(x *Ctx) {
	op := x.args[1]
	switch {
	case isKeyword(op, "and"), isKeyword(op, "or"), isKeyword(op, "xor"):
	case isKeyword(op, "not"):
		if len(x.args) != 4 {
			x.w.Error("ERR BITOP NOT must be called with a single source key.")
			return
		}
	default:
		x.w.Error(errSyntax)
		return
	}
	dst, keys := x.args[2], x.args[3:]
	srcs := make([][]byte, len(keys))
	maxLen := 0
	for i, k := range keys {
		e, found, ok := getString(x, k)
		if !ok {
			return
		}
		if found {
			srcs[i] = stringBytes(e, nil) // read-only views: the result is a new value
			maxLen = max(maxLen, len(srcs[i]))
		}
	}
	if maxLen == 0 {
		x.del(dst)
		x.w.Int(0)
		return
	}
	res := make([]byte, maxLen)
	byteAt := func(s []byte, i int) byte {
		if i < len(s) {
			return s[i]
		}
		return 0
	}
	for i := range res {
		b := byteAt(srcs[0], i)
		for _, s := range srcs[1:] {
			switch op[0] | 0x20 {
			case 'a':
				b &= byteAt(s, i)
			case 'o':
				b |= byteAt(s, i)
			case 'x':
				b ^= byteAt(s, i)
			}
		}
		if op[0]|0x20 == 'n' {
			b = ^b
		}
		res[i] = b
	}
	x.put(dst, shards.BytesEntry(res, 0))
	x.w.Int(int64(maxLen))
}

// BITFIELD and BITFIELD_RO: integers of 1 to 64 bits (unsigned: 63) at any
// bit offset of a string, as Redis 7.0's bitfieldGeneric. All operations
// are parsed first (their errors before the key's type), then run in
// order, a GET seeing the SETs and INCRBYs before it; OVERFLOW sets how
// the SETs and INCRBYs after it treat a value that does not fit: WRAP
// (the default), SAT, or FAIL (nothing written, a nil reply). A command
// with a write grows the value to the farthest bit it writes, even when
// every write fails, as Redis does, and logs the bytes from the first it
// writes to the last (a range effect).

type bfOp struct {
	op     byte // 'g', 's', 'i'
	signed bool
	bits   uint
	off    int64
	val    int64
	ow     byte // 'w', 's', 'f'
}

const errBitfieldType = "ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is."

func bitfieldCommands() []*Command {
	one := func(c *Command) *Command {
		c.FirstKey, c.LastKey, c.Step, c.Group = 1, 1, 1, "bitmap"
		return c
	}
	return []*Command{
		one(&Command{Name: "bitfield", Access: []command.KeyAccess{command.KeyReadWrite}, Docs: "key:key [operation=(GET encoding:string offset:integer|[OVERFLOW overflow_block=(WRAP|SAT|FAIL)] write_operation=(SET encoding:string offset:integer value:integer|INCRBY encoding:string offset:integer increment:integer))...]", Arity: -2, Flags: command.Write | command.DenyOOM | command.AddsKeys, Since: "3.2.0",
			Summary: "Performs arbitrary bitfield integer operations on strings.", Handler: cmdBitfield}),
		one(&Command{Name: "bitfield_ro", Docs: "key:key [GET encoding:string offset:integer...]", Arity: -2, Flags: command.Readonly | command.Fast, Since: "6.0.0",
			Summary: "Performs arbitrary read-only bitfield integer operations on strings.", Handler: cmdBitfield}),
	}
}

// bitfieldType parses i1..i64 or u1..u63.
func bitfieldType(b []byte) (signed bool, bits uint, ok bool) {
	if len(b) < 2 || (b[0] != 'i' && b[0] != 'u') {
		return false, 0, false
	}
	n, isInt := resp.ParseInt(b[1:])
	signed = b[0] == 'i'
	if !isInt || n < 1 || (signed && n > 64) || (!signed && n > 63) {
		return false, 0, false
	}
	return signed, uint(n), true
}

// bitfieldOffset parses an offset, or #n for n times the type's width.
func bitfieldOffset(x *Ctx, b []byte, bits uint) (int64, bool) {
	hash := len(b) > 0 && b[0] == '#'
	if hash {
		b = b[1:]
	}
	n, ok := resp.ParseInt(b)
	if ok && hash {
		n *= int64(bits) // wraps like Redis's long long product
	}
	if !ok || n < 0 || n>>3 >= maxStringLen(x) {
		x.w.Error(errBitOffset)
		return 0, false
	}
	return n, true
}

func cmdBitfield(x *Ctx) {
	ro := x.cmd.Name == "bitfield_ro"
	var ops []bfOp
	ow := byte('w')
	readonly := true
	var lowByte, highBit int64 = -1, 0
	args := x.args
	for j := 2; j < len(args); j++ {
		left := len(args) - j - 1
		var op byte
		switch a := args[j]; {
		case isKeyword(a, "get") && left >= 2:
			op = 'g'
		case isKeyword(a, "set") && left >= 3:
			op = 's'
		case isKeyword(a, "incrby") && left >= 3:
			op = 'i'
		case isKeyword(a, "overflow") && left >= 1:
			j++
			switch t := args[j]; {
			case isKeyword(t, "wrap"):
				ow = 'w'
			case isKeyword(t, "sat"):
				ow = 's'
			case isKeyword(t, "fail"):
				ow = 'f'
			default:
				x.w.Error("ERR Invalid OVERFLOW type specified")
				return
			}
			continue
		default:
			x.w.Error(errSyntax)
			return
		}
		signed, bits, ok := bitfieldType(args[j+1])
		if !ok {
			x.w.Error(errBitfieldType)
			return
		}
		off, ok := bitfieldOffset(x, args[j+2], bits)
		if !ok {
			return
		}
		o := bfOp{op: op, signed: signed, bits: bits, off: off, ow: ow}
		if op != 'g' {
			readonly = false
			if lowByte < 0 || off>>3 < lowByte {
				lowByte = off >> 3
			}
			highBit = max(highBit, off+int64(bits)-1)
			if o.val, ok = resp.ParseInt(args[j+3]); !ok {
				x.w.Error(errNotInt)
				return
			}
		}
		ops = append(ops, o)
		j += 3
		if op == 'g' {
			j--
		}
	}
	if !readonly && ro {
		x.w.Error("ERR BITFIELD_RO only supports the GET subcommand")
		return
	}
	key := x.args[1]
	var buf [20]byte
	e, cur, found, ok := readBits(x, key, buf[:0])
	if !ok {
		return
	}
	b := cur
	if !readonly { // a new value, grown to the farthest bit written
		if !checkStringLength(x, highBit>>3, 1) {
			return
		}
		b = make([]byte, max(int64(len(cur)), highBit>>3+1))
		copy(b, cur)
	}
	x.w.Array(len(ops))
	for _, o := range ops {
		old := getBitfield(b, o.off, o.bits)
		if o.op == 'g' {
			x.w.Int(signExtend(old, o.bits, o.signed))
			continue
		}
		next, reply, over := o.write(old)
		if over && o.ow == 'f' {
			x.w.Null()
			continue
		}
		x.w.Int(reply)
		setBitfield(b, o.off, o.bits, next)
	}
	if !readonly {
		x.storeRange(key, e, found, b, lowByte, b[lowByte:highBit>>3+1])
	}
}

// write runs a SET or INCRBY on a field holding old: the bits to store,
// the reply (SET: the old value, INCRBY: the new one), and whether the
// value did not fit (what is stored is then WRAP's or SAT's; FAIL stores
// nothing).
func (o bfOp) write(old uint64) (next uint64, reply int64, over bool) {
	if o.signed {
		prev := signExtend(old, o.bits, true)
		base, incr := o.val, int64(0) // SET: the value, checked as is
		if o.op == 'i' {
			base, incr = prev, o.val
		}
		v := base + incr
		if w, ov := signedOverflow(base, incr, o.bits, o.ow); ov {
			v, over = w, true
		}
		reply = v
		if o.op == 's' {
			reply = prev
		}
		return uint64(v), reply, over
	}
	base, incr := uint64(o.val), int64(0)
	if o.op == 'i' {
		base, incr = old, o.val
	}
	next = base + uint64(incr)
	if w, ov := unsignedOverflow(base, incr, o.bits, o.ow); ov {
		next, over = w, true
	}
	reply = int64(next)
	if o.op == 's' {
		reply = int64(old)
	}
	return next, reply, over
}

// getBitfield reads bits bits at bit off of s, zeros past its end.
func getBitfield(s []byte, off int64, bits uint) uint64 {
	var v uint64
	for i := range int64(bits) {
		v = v<<1 | uint64(bitOf(s, off+i))
	}
	return v
}

// setBitfield writes the low bits bits of v at bit off of s (long enough).
func setBitfield(s []byte, off int64, bits uint, v uint64) {
	for i := range bits {
		p := off + int64(i)
		mask := byte(1) << (7 - uint(p&7))
		if v>>(bits-1-i)&1 == 1 {
			s[p>>3] |= mask
		} else {
			s[p>>3] &^= mask
		}
	}
}

// signExtend is v, a bits-wide field, as an integer: two's complement
// when signed.
func signExtend(v uint64, bits uint, signed bool) int64 {
	if signed && bits < 64 && v&(1<<(bits-1)) != 0 {
		v |= ^uint64(0) << bits
	}
	return int64(v)
}

// unsignedOverflow is Redis's checkUnsignedBitfieldOverflow: whether
// value+incr leaves [0, 2^bits-1], and what WRAP or SAT make of it.
func unsignedOverflow(value uint64, incr int64, bits uint, ow byte) (uint64, bool) {
	maxv := uint64(1)<<bits - 1
	maxIncr, minIncr := int64(maxv-value), int64(-value)
	var sat uint64
	switch {
	case value > maxv || (incr > 0 && incr > maxIncr):
		sat = maxv
	case incr < 0 && incr < minIncr:
		sat = 0
	default:
		return 0, false
	}
	if ow == 'w' {
		return (value + uint64(incr)) &^ (^uint64(0) << bits), true
	}
	return sat, true
}

// signedOverflow is Redis's checkSignedBitfieldOverflow, for a bits-wide
// two's complement field.
func signedOverflow(value, incr int64, bits uint, ow byte) (int64, bool) {
	maxv := int64(1<<63 - 1)
	if bits < 64 {
		maxv = 1<<(bits-1) - 1
	}
	minv := -maxv - 1
	maxIncr := int64(uint64(maxv) - uint64(value))
	minIncr := minv - value
	var sat int64
	switch {
	case value > maxv || (bits != 64 && incr > maxIncr) || (value >= 0 && incr > 0 && incr > maxIncr):
		sat = maxv
	case value < minv || (bits != 64 && incr < minIncr) || (value < 0 && incr < 0 && incr < minIncr):
		sat = minv
	default:
		return 0, false
	}
	if ow == 'w' {
		c := uint64(value) + uint64(incr)
		if bits < 64 {
			mask := ^uint64(0) << bits
			if c&(1<<(bits-1)) != 0 {
				c |= mask
			} else {
				c &^= mask
			}
		}
		return int64(c), true
	}
	return sat, true
}
