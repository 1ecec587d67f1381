package script

import (
	"math"

	"github.com/turnstile/turnstile/resp"
)

// seedTokenBucket is the token-bucket script of the seed lessons (seed 000,
// section 6; libtest/testdata/seed000-token-bucket.lua):
//
//	KEYS[1] bucket; ARGV rate (tokens/s), burst, now (ms), cost
//	HMGET key tokens ts; refill; HSET key tokens <t> ts <now>;
//	PEXPIRE key ceil(burst/rate*1000)+1000; return {allowed, floor(tokens)}
var seedTokenBucket = &Native{
	Name:  "seed.token_bucket",
	SHA:   "98293b0b3736f863b1af246267c8e2ac716e2728",
	Check: seedCheck,
	Run:   seedRun,
}

var fieldTokens, fieldTS = []byte("tokens"), []byte("ts")

func seedCheck(keys, args [][]byte) bool {
	if len(keys) < 1 || len(args) < 4 {
		return false // the script fails on nil arithmetic: Lua reports it
	}
	for _, a := range args[:4] {
		if _, ok := ParseNumber(a); !ok {
			return false
		}
	}
	return true
}

func seedRun(c Caller, keys, args [][]byte, w *resp.Writer) {
	const sha = "98293b0b3736f863b1af246267c8e2ac716e2728"
	rate, _ := ParseNumber(args[0])
	burst, _ := ParseNumber(args[1])
	now, _ := ParseNumber(args[2])
	cost, _ := ParseNumber(args[3])
	r := c.Call(cmdHMGET, keys[0], fieldTokens, fieldTS)
	if e := r.Err(); e != "" {
		w.Error(e + ErrorSuffix(sha, 4))
		return
	}
	tokens, ts := burst, now
	if v := r.Elems[0]; v.Type == '$' {
		if f, ok := ParseNumber(v.Str); ok {
			tokens = f
		}
	}
	if v := r.Elems[1]; v.Type == '$' {
		if f, ok := ParseNumber(v.Str); ok {
			ts = f
		}
	}
	tokens = luaMin(burst, tokens+float64((now-ts)/1000*rate)) // float64(): no fused multiply-add
	allowed := int64(0)
	if tokens >= cost {
		tokens -= cost
		allowed = 1
	}
	r = c.Call(cmdHSET, keys[0], fieldTokens, c.Number(tokens), fieldTS, c.Number(now))
	if e := r.Err(); e != "" {
		w.Error(e + ErrorSuffix(sha, 10))
		return
	}
	r = c.Call(cmdPEXPIRE, keys[0], c.Number(math.Ceil(burst/rate*1000)+1000))
	if e := r.Err(); e != "" {
		w.Error(e + ErrorSuffix(sha, 11))
		return
	}
	w.Array(2)
	w.Int(allowed)
	w.Int(ToInt(math.Floor(tokens)))
}

// luaMin is Lua 5.1's math.min of two numbers: the first unless the
// second is smaller (so a NaN first argument wins, unlike math.Min).
func luaMin(a, b float64) float64 {
	if b < a {
		return b
	}
	return a
}
