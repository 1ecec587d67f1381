package script

import (
	"math"

	"github.com/turnstile/turnstile/resp"
)

// The scripts of redis_rate (github.com/go-redis/redis_rate/v10 v10.0.1),
// GCRA on one string key that holds the theoretical arrival time (TAT),
// in seconds since 2017-01-01 as a float, with an EX of the time until it
// no longer matters:
//
//	KEYS[1] the limit's key; ARGV burst, rate, period (s), cost
//	TIME; GET key; tat = max(tonumber(tat) or now, now)
//	allowN: allowed when the whole cost fits; allowAtMost: allows what fits
//	SET key <new tat> EX ceil(<reset after>) when something was allowed
//	and the reset lies ahead; return {allowed, remaining, "<retry after>",
//	"<reset after>"} (the two times as tostring prints them)
//
// burst, rate and period reach the arithmetic as strings (Lua converts
// them), cost through tonumber: Check takes plain decimal numbers only.
var (
	redisRateAllowN = &Native{
		Name:  "redis_rate.allowN",
		SHA:   "f52a5b566060d79fd321d695df55bc918339c4aa",
		Check: redisRateCheck,
		Run:   redisRateAllowNRun,
	}
	redisRateAllowAtMost = &Native{
		Name:  "redis_rate.allowAtMost",
		SHA:   "054143318f521948424aa25df61d7f7ba835a9d7",
		Check: redisRateCheck,
		Run:   redisRateAllowAtMostRun,
	}
)

// jan1st2017 is the epoch of redis_rate's times, in Unix seconds.
const jan1st2017 = 1483228800

var (
	argEX      = []byte("EX")
	replyMinus = []byte("-1")
)

func redisRateCheck(keys, args [][]byte) bool {
	if len(keys) < 1 || len(args) < 4 {
		return false
	}
	for _, a := range args[:4] {
		if _, ok := PlainNumber(a); !ok {
			return false
		}
	}
	return true
}

// redisRateArgs returns burst, rate, period and cost (checked).
func redisRateArgs(args [][]byte) (burst, rate, period, cost float64) {
	burst, _ = PlainNumber(args[0])
	rate, _ = PlainNumber(args[1])
	period, _ = PlainNumber(args[2])
	cost, _ = PlainNumber(args[3])
	return
}

// redisRateTAT runs the scripts' TIME and GET: now, and the stored TAT
// brought up to now. It writes the error of a failed GET (at getLine) or
// of a value that is not a number (math.max's, at maxLine) and returns
// false then.
func redisRateTAT(c Caller, key []byte, w *resp.Writer, sha string, timeLine, getLine, maxLine int) (now, tat float64, ok bool) {
	secs, micros, ok := timeCall(c)
	if !ok {
		w.Error("ERR TIME failed in a native script" + ErrorSuffix(sha, timeLine))
		return 0, 0, false
	}
	now = float64(secs-jan1st2017) + float64(micros/1000000)
	r := getCall(c, cmdGET, key)
	if raised(r, w, sha, getLine) {
		return 0, 0, false
	}
	tat = now
	if !r.IsNull() {
		if tat, ok = ParseNumber(r.Str); !ok {
			w.Error(RuntimeError(sha, maxLine, "bad argument #1 to max (number expected, got nil)"))
			return 0, 0, false
		}
	}
	return now, LuaMax(tat, now), true
}

// redisRateSet stores the new TAT for ceil(resetAfter) seconds; it writes
// the error (at line) and returns false when SET fails.
func redisRateSet(c Caller, key []byte, newTAT, resetAfter float64, w *resp.Writer, sha string, line int) bool {
	return !raised(setEXCall(c, key, newTAT, math.Ceil(resetAfter)), w, sha, line)
}

// redisRateReply writes {allowed, remaining, tostring(retryAfter) (or
// "-1" when allowed), tostring(resetAfter)}.
func redisRateReply(w *resp.Writer, allowed, remaining float64, denied bool, retryAfter, resetAfter float64) {
	var buf [32]byte
	w.Array(4)
	w.Int(ToInt(allowed))
	w.Int(ToInt(remaining))
	if denied {
		w.Bulk(AppendNumber(buf[:0], retryAfter))
	} else {
		w.Bulk(replyMinus)
	}
	w.Bulk(AppendNumber(buf[:0], resetAfter))
}

// Products are converted to float64 before they are added to anything:
// Go may fuse a multiply-add (on arm64, say), the interpreter never does.

func redisRateAllowNRun(c Caller, keys, args [][]byte, w *resp.Writer) {
	const sha = "f52a5b566060d79fd321d695df55bc918339c4aa"
	burst, rate, period, cost := redisRateArgs(args)
	emission := period / rate
	increment := float64(emission * cost)
	burstOffset := float64(emission * burst)
	now, tat, ok := redisRateTAT(c, keys[0], w, sha, 23, 26, 34)
	if !ok {
		return
	}
	newTAT := tat + increment
	allowAt := newTAT - burstOffset
	diff := now - allowAt
	remaining := diff / emission
	if remaining < 0 {
		redisRateReply(w, 0, 0, true, float64(diff*-1), tat-now)
		return
	}
	resetAfter := newTAT - now
	if resetAfter > 0 && !redisRateSet(c, keys[0], newTAT, resetAfter, w, sha, 55) {
		return
	}
	redisRateReply(w, cost, remaining, false, 0, resetAfter)
}

func redisRateAllowAtMostRun(c Caller, keys, args [][]byte, w *resp.Writer) {
	const sha = "054143318f521948424aa25df61d7f7ba835a9d7"
	burst, rate, period, cost := redisRateArgs(args)
	emission := period / rate
	burstOffset := float64(emission * burst)
	now, tat, ok := redisRateTAT(c, keys[0], w, sha, 22, 25, 33)
	if !ok {
		return
	}
	diff := now - (tat - burstOffset)
	remaining := diff / emission
	if remaining < 1 {
		redisRateReply(w, 0, 0, true, emission-diff, tat-now)
		return
	}
	if remaining < cost {
		cost, remaining = remaining, 0
	} else {
		remaining -= cost
	}
	increment := float64(emission * cost)
	newTAT := tat + increment
	resetAfter := newTAT - now
	if resetAfter > 0 && !redisRateSet(c, keys[0], newTAT, resetAfter, w, sha, 61) {
		return
	}
	redisRateReply(w, cost, remaining, false, 0, resetAfter)
}
