package script

import (
	"math"
	"strconv"

	"github.com/turnstile/turnstile/resp"
)

// Native is a Go implementation of one widely used script, recognised by
// the SHA1 of its exact text. It sends the commands the script would send,
// in the same order and with the same arguments, through a Caller, so its
// effects are the script's; it computes what the script computes with the
// same float64 arithmetic and writes the same reply. A differential test
// (server/native_diff_test.go) runs each against its Lua text on random
// inputs.
//
// A native runs without the interpreter and without the script lock: it
// touches only the keys the script declares, which the server locks
// before it starts, so natives run in parallel with each other.
type Native struct {
	Name string // "<library>.<script>", shown by INFO
	SHA  string // lower-case SHA1 of the script text
	// Check reports whether the native reproduces the script exactly for
	// these KEYS and ARGV (say, every number argument parses). When it does
	// not, the Lua text runs instead. Check reads nothing else.
	Check func(keys, args [][]byte) bool
	// Run runs the script, writing its reply (or its error, with the
	// script's error suffix) to w.
	Run func(c Caller, keys, args [][]byte, w *resp.Writer)

	index int // its position in Natives
}

// Index is n's position in Natives (a host counts runs by it).
func (n *Native) Index() int { return n.index }

// Caller runs one command for a native script, as redis.call does, inside
// the script's execution.
type Caller interface {
	Call(args ...[]byte) Reply
	// Number formats f as redis.call formats a number argument ("%.17g"),
	// in memory that stays valid until the execution ends (its effects may
	// point at it).
	Number(f float64) []byte
}

// Command names natives send (never written to).
var (
	cmdGET     = []byte("GET")
	cmdSET     = []byte("SET")
	cmdHMGET   = []byte("HMGET")
	cmdHSET    = []byte("HSET")
	cmdPEXPIRE = []byte("PEXPIRE")
	cmdTIME    = []byte("TIME")
)

// Reply is a command's reply, parsed. Str and the elements of Elems stay
// valid until the next Call.
type Reply struct {
	Type  byte // ':' integer, '$' bulk string, '+' status, '-' error, '*' array, '_' null
	Int   int64
	Str   []byte
	Elems []Reply
}

// IsNull reports a null bulk string or array (Lua's false).
func (r Reply) IsNull() bool { return r.Type == '_' }

// Err returns the error text of an error reply ("" otherwise), in the
// form a raised error carries it ("CODE message").
func (r Reply) Err() string {
	if r.Type != '-' {
		return ""
	}
	return errorCode(string(r.Str))
}

// ParseReply parses one RESP2 reply at the start of b into r, reusing
// r.Elems for the elements of an array; it returns the rest of b.
func ParseReply(b []byte, r *Reply) []byte {
	elems := r.Elems[:0]
	v, rest := parseOne(b, elems)
	if v.Elems == nil {
		v.Elems = elems // empty: kept for the next array
	}
	*r = v
	return rest
}

// parseOne parses one reply; an array's elements go into elems (nested
// arrays, which natives do not meet, get storage of their own).
func parseOne(b []byte, elems []Reply) (Reply, []byte) {
	if len(b) < 3 {
		return Reply{Type: '_'}, nil
	}
	line, rest := splitLine(b[1:])
	switch b[0] {
	case '+', '-':
		return Reply{Type: b[0], Str: line}, rest
	case ':':
		n, _ := strconv.ParseInt(string(line), 10, 64)
		return Reply{Type: ':', Int: n}, rest
	case '$':
		n, _ := strconv.Atoi(string(line))
		if n < 0 {
			return Reply{Type: '_'}, rest
		}
		return Reply{Type: '$', Str: rest[:n]}, rest[n+2:]
	case '*':
		n, _ := strconv.Atoi(string(line))
		if n < 0 {
			return Reply{Type: '_'}, rest
		}
		for range n {
			var e Reply
			e, rest = parseOne(rest, nil)
			elems = append(elems, e)
		}
		return Reply{Type: '*', Elems: elems}, rest
	}
	return Reply{Type: '_'}, rest
}

// natives are the known scripts by SHA1; built once, read-only.
var natives = func() map[string]*Native {
	m := make(map[string]*Native)
	for i, n := range nativeList() {
		if _, dup := m[n.SHA]; dup {
			panic("script: duplicate native " + n.Name)
		}
		n.index = i
		m[n.SHA] = n
	}
	return m
}()

// NativeFor returns the native implementation of the script with this
// lower-case SHA1, or nil.
func NativeFor(sha []byte) *Native { return natives[string(sha)] }

// Natives returns every native implementation (for INFO and tests).
func Natives() []*Native {
	out := make([]*Native, 0, len(natives))
	for _, n := range nativeList() {
		out = append(out, n)
	}
	return out
}

// nativeList lists the natives (native_*.go).
func nativeList() []*Native {
	return []*Native{
		seedTokenBucket,
		redisRateAllowN, redisRateAllowAtMost,
		rateLimitRedisIncrement, rateLimitRedisGet,
		rateLimiterFlexibleIncrTTL,
		ululeIncr, ululePeek,
		pyLimitsIncrExpire, pyLimitsMovingWindow, pyLimitsAcquireMovingWindow,
		throttledCAS,
		springRateLimiter,
	}
}

// ErrorSuffix is what a raised error gets after its message: the script's
// SHA1 and the line that raised it.
func ErrorSuffix(sha string, line int) string {
	return " script: " + sha + ", on @" + chunkName + ":" + strconv.Itoa(line) + "."
}

// raised writes r's error as raised by redis.call at line of the script
// sha, and reports whether r was an error.
func raised(r Reply, w *resp.Writer, sha string, line int) bool {
	if e := r.Err(); e != "" {
		w.Error(e + ErrorSuffix(sha, line))
		return true
	}
	return false
}

// FormatArg formats a number argument as redis.call does ("%.17g").
func FormatArg(f float64) string { return formatArg(f) }

// AppendArg appends f formatted as FormatArg does.
func AppendArg(dst []byte, f float64) []byte { return appendArg(dst, f) }

// FormatNumber formats a number as tostring does ("%.14g").
func FormatNumber(f float64) string { return formatNumber(f) }

// AppendNumber appends f formatted as FormatNumber does.
func AppendNumber(dst []byte, f float64) []byte { return appendNumber(dst, f) }

// PlainNumber parses a script argument that the script uses as a number,
// through tonumber or through arithmetic on the string (which the
// interpreter converts its own way), accepting only the plain decimal
// form on which those and C's strtod all agree: an optional sign, digits
// without a leading zero (but "0" itself), an optional fraction with
// digits, an optional exponent; finite and not -0. Checks use it: any
// other text makes the Lua text run.
func PlainNumber(b []byte) (float64, bool) {
	i := 0
	if i < len(b) && (b[i] == '+' || b[i] == '-') {
		i++
	}
	start := i
	var n int64
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		n = n*10 + int64(b[i]-'0') // meaningful up to 15 digits
		i++
	}
	if i == start || (b[start] == '0' && i-start > 1) {
		return 0, false
	}
	if i == len(b) && i-start <= 15 { // an integer below 2^53: exact, no ParseFloat
		if b[0] == '-' {
			return float64(-n), n != 0 // not -0
		}
		return float64(n), true
	}
	if i < len(b) && b[i] == '.' {
		i++
		from := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == from {
			return 0, false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		from := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == from {
			return 0, false
		}
	}
	if i != len(b) {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil || (f == 0 && math.Signbit(f)) {
		return 0, false
	}
	return f, true
}

// ArithNumber converts a string that a script uses in arithmetic as the
// interpreter does (gopher-lua: an integer in Go's base-0 syntax, else a
// float), for strings the server made (TIME's fields); arguments go
// through Check and PlainNumber instead.
func ArithNumber(b []byte) (float64, bool) {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t' || b[0] == '\n') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t' || b[len(b)-1] == '\n') {
		b = b[:len(b)-1]
	}
	s := string(b)
	if n, err := strconv.ParseInt(s, 0, 64); err == nil {
		return float64(n), true
	}
	f, err := strconv.ParseFloat(s, 64)
	return f, err == nil
}

// IntReply is an integer reply of redis.call as a script returns it:
// through a Lua number, so rounded beyond 2^53 (and 2^63-1 becomes the
// minimum int64, as in Redis).
func IntReply(n int64) int64 { return luaToInt(float64(n)) }

// RuntimeError is the error reply of a Lua error raised at line (not by
// redis.call): "ERR user_script:<line>: <msg>" and the error suffix.
func RuntimeError(sha string, line int, msg string) string {
	l := strconv.Itoa(line)
	return "ERR " + chunkName + ":" + l + ": " + msg + " script: " + sha + ", on @" + chunkName + ":" + l + "."
}

// LuaMax is math.max(a, b) of the interpreter: a unless b is greater (so
// a NaN a wins, unlike math.Max).
func LuaMax(a, b float64) float64 {
	if b > a {
		return b
	}
	return a
}

// ParseNumber converts a string as Lua's tonumber does.
func ParseNumber(s []byte) (float64, bool) { return parseNumber(string(s)) }

// ToInt converts a number reply as a script's return value is converted.
func ToInt(f float64) int64 { return luaToInt(f) }
