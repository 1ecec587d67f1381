package script

import (
	"strconv"

	"github.com/turnstile/turnstile/resp"
)

// Native is a Go implementation of one widely used script, recognised by
// the SHA1 of its exact text. It sends the commands the script would send,
// in the same order and with the same arguments, through a Caller, so its
// effects are the script's; it computes what the script computes with the
// same float64 arithmetic and writes the same reply. A differential test
// (native_test.go) runs each against its Lua text on random inputs.
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
}

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
	v, rest := parseOne(b, r.Elems[:0])
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
	for _, n := range nativeList() {
		if _, dup := m[n.SHA]; dup {
			panic("script: duplicate native " + n.Name)
		}
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
	return []*Native{seedTokenBucket}
}

// ErrorSuffix is what a raised error gets after its message: the script's
// SHA1 and the line that raised it.
func ErrorSuffix(sha string, line int) string {
	return " script: " + sha + ", on @" + chunkName + ":" + strconv.Itoa(line) + "."
}

// FormatArg formats a number argument as redis.call does ("%.17g").
func FormatArg(f float64) string { return formatArg(f) }

// AppendArg appends f formatted as FormatArg does.
func AppendArg(dst []byte, f float64) []byte { return appendArg(dst, f) }

// ParseNumber converts a string as Lua's tonumber does.
func ParseNumber(s []byte) (float64, bool) { return parseNumber(string(s)) }

// ToInt converts a number reply as a script's return value is converted.
func ToInt(f float64) int64 { return luaToInt(f) }
