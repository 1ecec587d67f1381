package script

import (
	"math"

	"github.com/turnstile/turnstile/resp"
)

// springRateLimiter is Spring Cloud Gateway's request_rate_limiter.lua
// (RedisRateLimiter; the text of its main branch at commit 5227205c7,
// after v5.0.3): a token bucket kept in two string keys.
//
//	KEYS[1] tokens, KEYS[2] timestamp; ARGV rate (tokens/s), capacity,
//	now (seconds), requested. GET both; refill by (now - last) * rate up
//	to capacity; take requested if there are as many; when
//	ttl = floor(capacity/rate*2) > 0, SETEX both keys for ttl seconds;
//	return {allowed and 1 or 0, new_tokens}.
var springRateLimiter = &Native{
	Name:  "spring-cloud-gateway.request_rate_limiter",
	SHA:   springSHA,
	Check: springCheck,
	Run:   springRun,
}

const springSHA = "0ad5736ed1c04aae6ec194376c784b89b8c08a7a"

var cmdSETEX = []byte("SETEX")

// springCheck: two keys and four number arguments. Without a number for
// now the script reads TIME's seconds as a string and does string
// arithmetic with it; without the others it fails on nil arithmetic:
// both are left to the interpreter.
func springCheck(keys, args [][]byte) bool {
	if len(keys) < 2 || len(args) < 4 {
		return false
	}
	for _, a := range args[:4] {
		if _, ok := ParseNumber(a); !ok {
			return false
		}
	}
	return true
}

func springRun(c Caller, keys, args [][]byte, w *resp.Writer) {
	rate, _ := ParseNumber(args[0])
	capacity, _ := ParseNumber(args[1])
	now, _ := ParseNumber(args[2])
	requested, _ := ParseNumber(args[3])
	fillTime := capacity / rate
	ttl := math.Floor(float64(fillTime * 2))

	r := getCall(c, cmdGET, keys[0])
	if raised(r, w, springSHA, 14) {
		return
	}
	lastTokens := capacity
	if !r.IsNull() {
		if f, ok := ParseNumber(r.Str); ok {
			lastTokens = f
		}
	}
	r = getCall(c, cmdGET, keys[1])
	if raised(r, w, springSHA, 15) {
		return
	}
	lastRefreshed := 0.0
	if !r.IsNull() {
		if f, ok := ParseNumber(r.Str); ok {
			lastRefreshed = f
		}
	}
	delta := LuaMax(0, now-lastRefreshed)
	filled := luaMin(capacity, lastTokens+float64(delta*rate))
	allowed := filled >= requested
	newTokens := filled
	if allowed {
		newTokens = filled - requested
	}
	if ttl > 0 {
		ttlArg := c.Number(ttl)
		if raised(setexCall(c, cmdSETEX, keys[0], ttlArg, c.Number(newTokens)), w, springSHA, 23) {
			return
		}
		if raised(setexCall(c, cmdSETEX, keys[1], ttlArg, c.Number(now)), w, springSHA, 24) {
			return
		}
	}
	w.Array(2)
	if allowed {
		w.Int(1)
	} else {
		w.Int(0)
	}
	w.Int(ToInt(newTokens))
}
