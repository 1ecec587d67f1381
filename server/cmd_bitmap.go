package server

import (
	"math/bits"

	"github.com/turnstile/turnstile/command"
	"github.com/turnstile/turnstile/resp"
	"github.com/turnstile/turnstile/shards"
)

// Bitmaps: string values read and written as bit arrays, bit 0 being the
// most significant bit of the first byte, as Redis 7.0's SETBIT, GETBIT,
// BITCOUNT, BITPOS and BITOP (BITFIELD is not implemented). An integer
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
	e, found, ok := getString(x, key)
	if !ok {
		return
	}
	var cur []byte
	if found {
		cur = e.AppendString(nil)
	}
	old := bitOf(cur, off)
	at := off >> 3
	grows := at >= int64(len(cur))
	x.w.Int(int64(old))
	if found && !grows && int64(old) == on {
		return
	}
	n := max(int64(len(cur)), at+1)
	b := make([]byte, n) // a new value: stored values are immutable
	copy(b, cur)
	mask := byte(1) << (7 - uint(off&7))
	if on == 1 {
		b[at] |= mask
	} else {
		b[at] &^= mask
	}
	if !found {
		x.newRange(key, shards.BytesEntry(b, 0), at, b[at:at+1])
		return
	}
	x.putRange(key, shards.BytesEntry(b, e.Exp), at, b[at:at+1])
}

// cmdGetBit implements GETBIT key offset.
func cmdGetBit(x *Ctx) {
	off, ok := bitOffset(x, x.args[2])
	if !ok {
		return
	}
	e, found, ok := getString(x, x.args[1])
	if !ok {
		return
	}
	if !found {
		x.w.Int(0)
		return
	}
	var buf [20]byte
	x.w.Int(int64(bitOf(stringBytes(e, buf[:0]), off)))
}

// stringBytes is a string entry's value: its bytes, or an integer's
// decimal text appended to buf.
func stringBytes(e shards.Entry, buf []byte) []byte {
	if e.Kind == shards.KindInt {
		return e.AppendString(buf)
	}
	return e.Str
}

// bitRange parses the range arguments of BITCOUNT (start end [unit]) and
// BITPOS (start [end [unit]]) for a value of n bytes, as Redis 7.0 does:
// BITCOUNT reads start, end, then the unit, BITPOS start, the unit, then
// end; negative indexes count from the end, the range is clamped to the
// value, and BITCOUNT answers 0 at once for a negative start past a
// negative end. It returns the bit range [lo, hi] (in BYTE units whole
// bytes), empty when there is none; endGiven reports whether an end was
// given. ok is false after an error reply.
func bitRange(x *Ctx, args [][]byte, n int64, bitpos bool) (lo, hi int64, endGiven, empty, ok bool) {
	fail := func(err string) (int64, int64, bool, bool, bool) {
		x.w.Error(err)
		return 0, 0, false, false, false
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
	if !bitpos && start < 0 && end < 0 && start > end {
		return 0, 0, endGiven, true, true
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
		return 0, 0, endGiven, true, true
	}
	if !isBit {
		return start << 3, end<<3 | 7, endGiven, false, true
	}
	return start, end, endGiven, false, true
}

// cmdBitCount implements BITCOUNT key [start end [BYTE|BIT]].
func cmdBitCount(x *Ctx) {
	e, found, ok := getString(x, x.args[1])
	if !ok {
		return
	}
	if !found {
		x.w.Int(0)
		return
	}
	var buf [20]byte
	s := stringBytes(e, buf[:0])
	lo, hi := int64(0), int64(len(s))<<3-1
	switch len(x.args) {
	case 2:
	case 4, 5:
		var empty bool
		if lo, hi, _, empty, ok = bitRange(x, x.args[2:], int64(len(s)), false); !ok {
			return
		} else if empty {
			x.w.Int(0)
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
	e, found, ok := getString(x, x.args[1])
	if !ok {
		return
	}
	if !found {
		x.w.Int(-want)
		return
	}
	var buf [20]byte
	s := stringBytes(e, buf[:0])
	lo, hi, endGiven := int64(0), int64(len(s))<<3-1, false
	switch len(x.args) {
	case 3:
	case 4, 5, 6:
		var empty bool
		if lo, hi, endGiven, empty, ok = bitRange(x, x.args[3:], int64(len(s)), true); !ok {
			return
		} else if empty {
			x.w.Int(-1)
			return
		}
	default:
		x.w.Error(errSyntax)
		return
	}
	if lo > hi { // an empty value
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
			srcs[i] = e.AppendString(nil)
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
