package server

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/redis/go-redis/v9"
)

// The limiter algorithms as people write them in Lua for Redis (each takes
// now in ms as an argument, so both servers see the same instants). These
// are this test's own statements of the usual patterns: INCR-style fixed
// windows, the seed's two-counter sliding window (in exact integers), the
// sorted-set sliding log, GCRA on a stored TAT, and the leaky-bucket queue.
var rlLuaScripts = map[string]string{
	"FIXED": `
local limit, period, now = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local w = math.floor(now / period)
local k = KEYS[1] .. ':' .. w
local n = tonumber(redis.call('GET', k) or '0')
if n + 1 > limit then return 0 end
redis.call('SET', k, n + 1, 'PX', 2 * period + 600000)
return 1`,
	"SLIDING": `
local limit, period, now = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local w = math.floor(now / period)
local cur = tonumber(redis.call('GET', KEYS[1] .. ':' .. w) or '0')
local prev = tonumber(redis.call('GET', KEYS[1] .. ':' .. (w - 1)) or '0')
local elapsed = now - w * period
-- prev * (1 - elapsed/period) + cur < limit, multiplied out by period
if prev * (period - elapsed) + cur * period >= limit * period then return 0 end
redis.call('SET', KEYS[1] .. ':' .. w, cur + 1, 'PX', 3 * period + 600000)
return 1`,
	"LOG": `
local limit, period, now = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - period)
if redis.call('ZCARD', KEYS[1]) >= limit then return 0 end
redis.call('ZADD', KEYS[1], now, now .. ':' .. redis.call('INCR', KEYS[1] .. ':seq'))
redis.call('PEXPIRE', KEYS[1], period + 600000)
return 1`,
	"GCRA": `
local limit, period, now, burst = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local t = period / limit
local tat = math.max(tonumber(redis.call('GET', KEYS[1]) or now), now)
if tat + t - now > burst * t then return 0 end
redis.call('SET', KEYS[1], tat + t, 'PX', burst * t + 600000)
return 1`,
	"QUEUE": `
local rate, period, now, burst = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local t = period / rate
local free = tonumber(redis.call('GET', KEYS[1]) or '0')
local waiting = 0
if free > now then waiting = math.ceil((free - now) / t) - 1 end
if free > now and waiting + 1 > burst then return 0 end
redis.call('SET', KEYS[1], math.max(free, now) + t, 'PX', (burst + 1) * t + 600000)
return 1`,
}

// TestRLAgainstRedisLua runs random request sequences through RL.LIMIT and
// RL.QUEUE on Turnstile (its manual clock set to each instant) and through
// the same algorithm as a Lua script on a real redis-server (the instant
// passed in), and expects the same decision for every request.
func TestRLAgainstRedisLua(t *testing.T) {
	raddr := startRedis(t)
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: raddr})
	defer rdb.Close()
	_, addr, clk := newTestServer(t)
	c := dialRaw(t, addr)
	rng := rand.New(rand.NewPCG(21, 22))
	baseMs := testEpoch / 1e6
	for _, algo := range []string{"FIXED", "SLIDING", "LOG", "GCRA", "QUEUE"} {
		sha, err := rdb.ScriptLoad(ctx, rlLuaScripts[algo]).Result()
		if err != nil {
			t.Fatalf("%s: %v", algo, err)
		}
		decisions, allowed := 0, 0
		for run := range 12 {
			limit := 1 + rng.Int64N(10)
			tMs := 5 + rng.Int64N(60) // ms per request: period = limit * t
			period := limit * tMs
			burst := 1 + rng.Int64N(6)
			key := fmt.Sprintf("%s:%d", algo, run)
			now := baseMs + 1_000_000*int64(run) + rng.Int64N(period)
			for step := range 150 {
				now += rng.Int64N(2*tMs + 1)
				clk.Set(now * 1e6)
				var ts string
				switch algo {
				case "GCRA":
					ts = c.do("RL.LIMIT", key, algo, strconv.FormatInt(limit, 10), strconv.FormatInt(period, 10)+"ms", "BURST", strconv.FormatInt(burst, 10))
				case "QUEUE":
					ts = c.do("RL.QUEUE", key, strconv.FormatInt(limit, 10), strconv.FormatInt(period, 10)+"ms", "BURST", strconv.FormatInt(burst, 10))
				default:
					ts = c.do("RL.LIMIT", key, algo, strconv.FormatInt(limit, 10), strconv.FormatInt(period, 10)+"ms")
				}
				rd, err := rdb.EvalSha(ctx, sha, []string{key}, limit, period, now, burst).Int64()
				if err != nil {
					t.Fatalf("%s: redis: %v", algo, err)
				}
				got := ts[len("*5\r\n:")] == '1'
				if got != (rd == 1) {
					t.Fatalf("%s run %d step %d (limit %d, period %d ms, burst %d, now %d ms): Turnstile %q, Redis Lua %d",
						algo, run, step, limit, period, burst, now, ts, rd)
				}
				decisions++
				if got {
					allowed++
				}
			}
		}
		t.Logf("%s: %d decisions agree (%d allowed)", algo, decisions, allowed)
		if allowed == 0 || allowed == decisions {
			t.Fatalf("%s: a one-sided run (%d of %d allowed) proves nothing", algo, allowed, decisions)
		}
	}
}
