package script

import "github.com/turnstile/turnstile/resp"

// The scripts of ulule/limiter (github.com/ulule/limiter/v3 v3.11.2, its
// Redis store): a fixed window counted in one string key.
//
//	incr: KEYS[1]; ARGV count, ttl (ms). incrby key count; when the
//	  result is count (a new window) pexpire key ttl if ttl > 0 and
//	  return {count, ttl}; else return {result, pttl key}.
//	peek: KEYS[1]. get key; {0, 0} when there is none, else
//	  {tonumber(value), pttl key} (an empty array when the value is no
//	  number: the table ends at its nil).
var (
	ululeIncr = &Native{
		Name:  "ulule-limiter.incr",
		SHA:   "f74233f556d3f99c50b61169cf8aa8d5deb63fb2",
		Check: ululeIncrCheck,
		Run:   ululeIncrRun,
	}
	ululePeek = &Native{
		Name:  "ulule-limiter.peek",
		SHA:   "566f5c6a17e5fddb9a10bf389f754edd0d899c61",
		Check: func(keys, _ [][]byte) bool { return len(keys) >= 1 },
		Run:   ululePeekRun,
	}
)

var (
	cmdPexpireLower = []byte("pexpire")
	cmdGetLower     = []byte("get")
)

// ululeIncrCheck: ttl must be a number (tonumber): the script compares it
// with 0, which fails on nil.
func ululeIncrCheck(keys, args [][]byte) bool {
	if len(keys) < 1 || len(args) < 2 {
		return false
	}
	_, ok := ParseNumber(args[1])
	return ok
}

func ululeIncrRun(c Caller, keys, args [][]byte, w *resp.Writer) {
	const sha = "f74233f556d3f99c50b61169cf8aa8d5deb63fb2"
	count, countOK := ParseNumber(args[0]) // nil in Lua when not a number
	ttl, _ := ParseNumber(args[1])
	r := c.Call(cmdIncrbyLower, keys[0], args[0])
	if raised(r, w, sha, 5) {
		return
	}
	ret := float64(r.Int)
	if countOK && ret == count {
		if ttl > 0 && raised(c.Call(cmdPexpireLower, keys[0], args[1]), w, sha, 8) {
			return
		}
		w.Array(2)
		w.Int(ToInt(ret))
		w.Int(ToInt(ttl))
		return
	}
	r = pttlCall(c, cmdPttlLower, keys[0])
	if raised(r, w, sha, 12) {
		return
	}
	w.Array(2)
	w.Int(ToInt(ret))
	w.Int(IntReply(r.Int))
}

func ululePeekRun(c Caller, keys, _ [][]byte, w *resp.Writer) {
	const sha = "566f5c6a17e5fddb9a10bf389f754edd0d899c61"
	r := getCall(c, cmdGetLower, keys[0])
	if raised(r, w, sha, 3) {
		return
	}
	if r.IsNull() {
		w.Array(2)
		w.Int(0)
		w.Int(0)
		return
	}
	v, isNumber := ParseNumber(r.Str) // before the next call reuses the reply
	r = pttlCall(c, cmdPttlLower, keys[0])
	if raised(r, w, sha, 7) {
		return
	}
	if !isNumber {
		w.Array(0)
		return
	}
	w.Array(2)
	w.Int(ToInt(v))
	w.Int(IntReply(r.Int))
}
