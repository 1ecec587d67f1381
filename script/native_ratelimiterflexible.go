package script

import "github.com/turnstile/turnstile/resp"

// rateLimiterFlexibleIncrTTL is the script of rate-limiter-flexible 11.4.0
// (npm; RateLimiterRedis), all on one line:
//
//	KEYS[1]; ARGV points, duration (s)
//	set key 0 EX duration NX; incrby key points; pttl key; when the key
//	has no TTL, expire key duration and ttl = 1000 * duration;
//	return {consumed, ttl}
//
// duration reaches the arithmetic as a string (Lua converts it): Check
// takes a plain decimal number only.
var rateLimiterFlexibleIncrTTL = &Native{
	Name:  "rate-limiter-flexible.incrTtl",
	SHA:   "a1de965f42e177aa339706bd580f049065eca79a",
	Check: rateLimiterFlexibleCheck,
	Run:   rateLimiterFlexibleRun,
}

var (
	cmdSetLower    = []byte("set")
	cmdIncrbyLower = []byte("incrby")
	cmdPttlLower   = []byte("pttl")
	cmdExpireLower = []byte("expire")
	argNX          = []byte("NX")
	argZero        = []byte("0")
)

func rateLimiterFlexibleCheck(keys, args [][]byte) bool {
	if len(keys) < 1 || len(args) < 2 {
		return false
	}
	_, ok := PlainNumber(args[1])
	return ok
}

func rateLimiterFlexibleRun(c Caller, keys, args [][]byte, w *resp.Writer) {
	const sha = "a1de965f42e177aa339706bd580f049065eca79a"
	key, points, duration := keys[0], args[0], args[1]
	if raised(c.Call(cmdSetLower, key, argZero, argEX, duration, argNX), w, sha, 1) {
		return
	}
	r := c.Call(cmdIncrbyLower, key, points)
	if raised(r, w, sha, 1) {
		return
	}
	consumed := r.Int
	r = pttlCall(c, cmdPttlLower, key)
	if raised(r, w, sha, 1) {
		return
	}
	ttl := float64(r.Int)
	if ttl == -1 {
		if raised(c.Call(cmdExpireLower, key, duration), w, sha, 1) {
			return
		}
		secs, _ := PlainNumber(duration)
		ttl = 1000 * secs
	}
	w.Array(2)
	w.Int(IntReply(consumed))
	w.Int(ToInt(ttl))
}
