package script

import (
	"math"

	"github.com/turnstile/turnstile/resp"
)

// The scripts of Python's limits 2.8.0 (its Redis storage), each on one
// key:
//
//	incr_expire: KEYS[1]; ARGV expiry (s), amount. incrby key amount;
//	  when the result is amount (a new window) expire key expiry;
//	  return the result.
//	moving_window: KEYS[1] a list of timestamps, newest first; ARGV
//	  oldest timestamp still in the window, limit. lrange key 0 limit;
//	  count the leading entries >= that timestamp; return {oldest of
//	  them, count} ({} when none).
//	acquire_moving_window: KEYS[1] the list; ARGV now, limit, expiry,
//	  amount. lindex key (limit - amount); false (refused) when that
//	  entry is still in the window; else lpush now amount times, ltrim key
//	  0 (limit - 1), expire key expiry; true.
//
// Every number goes through tonumber, so the checks only require that
// those that matter are numbers; acquire_moving_window's amount must also
// be a count from 1 to maxMovingWindowAmount (Lua pushes floor(amount)
// entries: none would be a wrong-arity call, millions a slow one).
var (
	pyLimitsIncrExpire = &Native{
		Name:  "python-limits.incr_expire",
		SHA:   "628bd136a573a06b346879695681af12ccef300f",
		Check: pyLimitsIncrExpireCheck,
		Run:   pyLimitsIncrExpireRun,
	}
	pyLimitsMovingWindow = &Native{
		Name:  "python-limits.moving_window",
		SHA:   "3136f0028c572d2959b5cdc5ec15b287fab6a9ff",
		Check: pyLimitsMovingWindowCheck,
		Run:   pyLimitsMovingWindowRun,
	}
	pyLimitsAcquireMovingWindow = &Native{
		Name:  "python-limits.acquire_moving_window",
		SHA:   "d19f37c18768a509dbf1310a257bfc35be65609f",
		Check: pyLimitsAcquireCheck,
		Run:   pyLimitsAcquireRun,
	}
)

// maxMovingWindowAmount bounds the entries one native acquire pushes.
const maxMovingWindowAmount = 1000

var (
	cmdLrangeLower = []byte("lrange")
	cmdLindexLower = []byte("lindex")
	cmdLpushLower  = []byte("lpush")
	cmdLtrimLower  = []byte("ltrim")
)

// numbers reports whether every argument is a number (tonumber).
func numbers(args ...[]byte) bool {
	for _, a := range args {
		if _, ok := ParseNumber(a); !ok {
			return false
		}
	}
	return true
}

// pyLimitsIncrExpireCheck: amount must be a number, else redis.call gets
// nil and refuses it with its own error.
func pyLimitsIncrExpireCheck(keys, args [][]byte) bool {
	return len(keys) >= 1 && len(args) >= 2 && numbers(args[1])
}

func pyLimitsIncrExpireRun(c Caller, keys, args [][]byte, w *resp.Writer) {
	const sha = "628bd136a573a06b346879695681af12ccef300f"
	amount, _ := ParseNumber(args[1])
	r := c.Call(cmdIncrbyLower, keys[0], c.Number(amount))
	if raised(r, w, sha, 3) {
		return
	}
	current := float64(r.Int)
	if current == amount && raised(c.Call(cmdExpireLower, keys[0], args[0]), w, sha, 6) {
		return
	}
	w.Int(ToInt(current))
}

// pyLimitsMovingWindowCheck: the limit must be a number (redis.call
// refuses nil), the timestamp too (comparing with nil fails).
func pyLimitsMovingWindowCheck(keys, args [][]byte) bool {
	return len(keys) >= 1 && len(args) >= 2 && numbers(args[0], args[1])
}

func pyLimitsMovingWindowRun(c Caller, keys, args [][]byte, w *resp.Writer) {
	const sha = "3136f0028c572d2959b5cdc5ec15b287fab6a9ff"
	expiry, _ := ParseNumber(args[0])
	limit, _ := ParseNumber(args[1])
	r := c.Call(cmdLrangeLower, keys[0], argZero, c.Number(limit))
	if raised(r, w, sha, 1) {
		return
	}
	count, oldest, found := int64(0), 0.0, false
	for _, item := range r.Elems {
		t, ok := ParseNumber(item.Str)
		if !ok {
			w.Error(RuntimeError(sha, 7, "attempt to compare number with nil"))
			return
		}
		if !(t >= expiry) {
			break
		}
		count++
		if !found {
			oldest, found = t, true
		}
	}
	if !found {
		w.Array(0) // {nil, a}: the table ends at its nil
		return
	}
	w.Array(2)
	w.Int(ToInt(oldest))
	w.Int(count)
}

// pyLimitsAcquireCheck: all four must be numbers (nil fails in
// redis.call or in arithmetic), amount a count the native may push.
func pyLimitsAcquireCheck(keys, args [][]byte) bool {
	if len(keys) < 1 || len(args) < 4 || !numbers(args[:4]...) {
		return false
	}
	amount, _ := ParseNumber(args[3])
	return amount >= 1 && amount <= maxMovingWindowAmount
}

func pyLimitsAcquireRun(c Caller, keys, args [][]byte, w *resp.Writer) {
	const sha = "d19f37c18768a509dbf1310a257bfc35be65609f"
	now, _ := ParseNumber(args[0])
	limit, _ := ParseNumber(args[1])
	expiry, _ := ParseNumber(args[2])
	amount, _ := ParseNumber(args[3])
	key := keys[0]
	r := c.Call(cmdLindexLower, key, c.Number(limit-amount))
	if raised(r, w, sha, 2) {
		return
	}
	if !r.IsNull() {
		t, ok := ParseNumber(r.Str)
		if !ok {
			w.Error(RuntimeError(sha, 6, "attempt to compare number with nil"))
			return
		}
		if t >= now-expiry {
			w.Null() // false
			return
		}
	}
	n := int(math.Floor(amount)) // for i=1, amount
	stamp := c.Number(now)
	push := make([][]byte, 0, 2+n)
	push = append(push, cmdLpushLower, key)
	for range n {
		push = append(push, stamp)
	}
	if raised(c.Call(push...), w, sha, 14) {
		return
	}
	if raised(c.Call(cmdLtrimLower, key, argZero, c.Number(limit-1)), w, sha, 15) {
		return
	}
	if raised(c.Call(cmdExpireLower, key, c.Number(expiry)), w, sha, 16) {
		return
	}
	w.Int(1) // true
}
