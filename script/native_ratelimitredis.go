package script

import "github.com/turnstile/turnstile/resp"

// The scripts of rate-limit-redis 6.0.1 (npm; the store of
// express-rate-limit): a fixed window counted in one string key.
//
//	increment: KEYS[1]; ARGV windowMs. PTTL key; when it is not positive
//	  (no key, or no TTL) SET key 1 PX windowMs and return {1, windowMs},
//	  else INCR key and return {hits, pttl}.
//	get: KEYS[1]. GET key, PTTL key; return {hits or nil, pttl}.
var (
	rateLimitRedisIncrement = &Native{
		Name:  "rate-limit-redis.increment",
		SHA:   "895b92e1712734e1b464999be23953485475357b",
		Check: rateLimitRedisIncrementCheck,
		Run:   rateLimitRedisIncrementRun,
	}
	rateLimitRedisGet = &Native{
		Name:  "rate-limit-redis.get",
		SHA:   "6aeb97ed6086dcdeafdc6fda3999a0d0e38ec96a",
		Check: func(keys, _ [][]byte) bool { return len(keys) >= 1 },
		Run:   rateLimitRedisGetRun,
	}
)

var (
	cmdPTTL = []byte("PTTL")
	cmdINCR = []byte("INCR")
	argPX   = []byte("PX")
	argOne  = []byte("1")
)

// rateLimitRedisIncrementCheck: windowMs must be a number (tonumber):
// without one SET gets nil, which redis.call refuses with its own error.
func rateLimitRedisIncrementCheck(keys, args [][]byte) bool {
	if len(keys) < 1 || len(args) < 1 {
		return false
	}
	_, ok := ParseNumber(args[0])
	return ok
}

func rateLimitRedisIncrementRun(c Caller, keys, args [][]byte, w *resp.Writer) {
	const sha = "895b92e1712734e1b464999be23953485475357b"
	window, _ := ParseNumber(args[0])
	r := pttlCall(c, cmdPTTL, keys[0])
	if raised(r, w, sha, 2) {
		return
	}
	ttl := float64(r.Int)
	if ttl <= 0 {
		px := c.Number(window)
		if raised(c.Call(cmdSET, keys[0], argOne, argPX, px), w, sha, 4) {
			return
		}
		w.Array(2)
		w.Int(1)
		w.Int(ToInt(window))
		return
	}
	r = c.Call(cmdINCR, keys[0])
	if raised(r, w, sha, 7) {
		return
	}
	w.Array(2)
	w.Int(IntReply(r.Int))
	w.Int(ToInt(ttl))
}

func rateLimitRedisGetRun(c Caller, keys, _ [][]byte, w *resp.Writer) {
	const sha = "6aeb97ed6086dcdeafdc6fda3999a0d0e38ec96a"
	r := getCall(c, cmdGET, keys[0])
	if raised(r, w, sha, 1) {
		return
	}
	mark := w.Len() // the reply goes out now: GET's is gone after the next call
	w.Array(2)
	if r.IsNull() {
		w.Null()
	} else {
		w.Bulk(r.Str)
	}
	r = pttlCall(c, cmdPTTL, keys[0])
	if r.Err() != "" {
		w.Truncate(mark)
		raised(r, w, sha, 2)
		return
	}
	w.Int(IntReply(r.Int))
}
