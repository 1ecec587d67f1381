package server

import (
	"math"
	"strconv"

	"github.com/turnstile/turnstile/resp"
	"github.com/turnstile/turnstile/shards"
)

// scanDefaultCount is SCAN's COUNT when none is given, as in Redis.
const scanDefaultCount = 10

// cmdScan is SCAN cursor [MATCH pattern] [COUNT count] [TYPE type].
//
// The cursor is shards.Map.Scan's: a key present for the whole iteration is
// returned exactly once, whatever is inserted or deleted meanwhile. As in
// Redis, MATCH and TYPE filter the keys visited in this step, so a reply may
// hold fewer than COUNT keys (even none) before the cursor returns to 0.
func cmdScan(x *Ctx) {
	cursor, ok := parseScanCursor(x.args[1])
	if !ok {
		x.w.Error(errInvalidCursor)
		return
	}
	count := int64(scanDefaultCount)
	var pat, typ []byte
	for i := 2; i < len(x.args); i += 2 {
		a := x.args[i]
		if i+1 >= len(x.args) {
			x.w.Error(errSyntax)
			return
		}
		v := x.args[i+1]
		switch {
		case isKeyword(a, "count"):
			n, ok := resp.ParseInt(v)
			if !ok {
				x.w.Error(errNotInt)
				return
			}
			if n < 1 {
				x.w.Error(errSyntax)
				return
			}
			count = n
		case isKeyword(a, "match"):
			pat = v
			if matchesAll(pat) {
				pat = nil
			}
		case isKeyword(a, "type"):
			typ = v
		default:
			x.w.Error(errSyntax)
			return
		}
	}
	var keys []string
	next := x.scan(cursor, int(min(count, math.MaxInt)), func(k string, e shards.Entry) {
		if pat != nil && !globMatch(pat, k, false) {
			return
		}
		if typ != nil && !isKeyword(typ, e.TypeName()) {
			return
		}
		keys = append(keys, k)
	})
	x.w.Array(2)
	x.w.BulkString(strconv.FormatUint(next, 10))
	x.w.Array(len(keys))
	for _, k := range keys {
		x.w.BulkString(k)
	}
}

// parseScanCursor parses a SCAN cursor the way Redis does (C strtoull in
// base 10, then strict checks): no leading space, an optional '+' or '-'
// (a negative cursor wraps modulo 2^64, as strtoull does), decimal digits,
// nothing after them, and no overflow of 64 bits. The empty string is
// cursor 0, as in Redis.
func parseScanCursor(b []byte) (uint64, bool) {
	b = cstr(b) // strtoull stops at a NUL byte
	if len(b) == 0 {
		return 0, true
	}
	i := 0
	neg := false
	if b[0] == '+' || b[0] == '-' {
		neg = b[0] == '-'
		i++
	}
	u, ok := parseDigits(b[i:])
	if !ok {
		return 0, false
	}
	if neg {
		u = -u
	}
	return u, true
}
