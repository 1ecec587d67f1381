package libtest

import (
	"testing"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/throttled/throttled/v2"
	goredisstore "github.com/throttled/throttled/v2/store/goredisstore.v9"
	"github.com/ulule/limiter/v3"
	ulredis "github.com/ulule/limiter/v3/drivers/store/redis"
)

// TestRedisRate runs go-redis/redis_rate v10 (GCRA in a Lua script sent with
// EVALSHA, falling back to EVAL) through a burst and a refill.
func TestRedisRate(t *testing.T) {
	addr := serverAddr(t)
	rdb := goRedis(t, addr)
	ctx := testCtx(t, 15*time.Second)
	prefix := keyPrefix(t)
	lim := redis_rate.NewLimiter(rdb)

	// PerMinute(5): a burst of 5, then one request every 12 s. The whole
	// burst takes milliseconds, so no token comes back during it.
	perMin := redis_rate.PerMinute(5)
	key := prefix + "burst"
	for i := 1; i <= 5; i++ {
		res, err := lim.Allow(ctx, key, perMin)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		if res.Allowed != 1 || res.Remaining != 5-i || res.RetryAfter != -1 {
			t.Fatalf("request %d: allowed %d remaining %d retry-after %v, want 1, %d, -1",
				i, res.Allowed, res.Remaining, res.RetryAfter, 5-i)
		}
		if res.ResetAfter <= time.Duration(i-1)*12*time.Second || res.ResetAfter > time.Duration(i)*12*time.Second {
			t.Fatalf("request %d: reset-after %v, want in (%v, %v]", i, res.ResetAfter,
				time.Duration(i-1)*12*time.Second, time.Duration(i)*12*time.Second)
		}
	}
	res, err := lim.Allow(ctx, key, perMin)
	if err != nil {
		t.Fatalf("request 6: %v", err)
	}
	if res.Allowed != 0 || res.Remaining != 0 {
		t.Fatalf("request 6: allowed %d remaining %d, want denied with 0 remaining", res.Allowed, res.Remaining)
	}
	if res.RetryAfter < 10*time.Second || res.RetryAfter > 12*time.Second {
		t.Fatalf("request 6: retry-after %v, want about 12 s (10..12 s)", res.RetryAfter)
	}

	// AllowN takes several at once; AllowAtMost takes what is left.
	keyN := prefix + "n"
	if res, err := lim.AllowN(ctx, keyN, perMin, 2); err != nil || res.Allowed != 2 || res.Remaining != 3 {
		t.Fatalf("AllowN(2): %+v, %v; want 2 allowed, 3 remaining", res, err)
	}
	// Denied: redis_rate reports 0 remaining and the wait for the one
	// missing token.
	if res, err := lim.AllowN(ctx, keyN, perMin, 4); err != nil || res.Allowed != 0 || res.Remaining != 0 ||
		res.RetryAfter < 10*time.Second || res.RetryAfter > 12*time.Second {
		t.Fatalf("AllowN(4) with 3 left: %+v, %v; want 0 allowed, 0 remaining, retry-after about 12 s", res, err)
	}
	if res, err := lim.AllowAtMost(ctx, keyN, perMin, 10); err != nil || res.Allowed != 3 || res.Remaining != 0 {
		t.Fatalf("AllowAtMost(10) with 3 left: %+v, %v; want 3 allowed, 0 remaining", res, err)
	}

	// Reset deletes the key: the bucket is full again.
	if err := lim.Reset(ctx, key); err != nil {
		t.Fatalf("reset: %v", err)
	}
	if res, err := lim.Allow(ctx, key, perMin); err != nil || res.Allowed != 1 || res.Remaining != 4 {
		t.Fatalf("after reset: %+v, %v; want allowed, 4 remaining", res, err)
	}

	// PerSecond(10): after the burst, waiting the reported retry-after
	// (at most 100 ms) lets the next request through, by the server's clock.
	perSec := redis_rate.PerSecond(10)
	keyS := prefix + "refill"
	var denied *redis_rate.Result
	for i := 1; i <= 20 && denied == nil; i++ {
		res, err := lim.Allow(ctx, keyS, perSec)
		if err != nil {
			t.Fatalf("per-second request %d: %v", i, err)
		}
		if res.Allowed == 0 {
			denied = res
		}
	}
	if denied == nil {
		t.Fatal("PerSecond(10): 20 requests in a row were all allowed")
	}
	if denied.RetryAfter <= 0 || denied.RetryAfter > 100*time.Millisecond {
		t.Fatalf("PerSecond(10) denial: retry-after %v, want in (0, 100ms]", denied.RetryAfter)
	}
	time.Sleep(denied.RetryAfter + 20*time.Millisecond)
	if res, err := lim.Allow(ctx, keyS, perSec); err != nil || res.Allowed != 1 {
		t.Fatalf("after waiting the retry-after: %+v, %v; want allowed", res, err)
	}
}

// TestUluleLimiter runs ulule/limiter v3 with its go-redis v9 store, which
// loads two scripts with SCRIPT LOAD when the store is built and then calls
// them with EVALSHA.
func TestUluleLimiter(t *testing.T) {
	addr := serverAddr(t)
	rdb := goRedis(t, addr)
	ctx := testCtx(t, 15*time.Second)
	prefix := keyPrefix(t)

	store, err := ulredis.NewStoreWithOptions(rdb, limiter.StoreOptions{Prefix: prefix + "ulule", MaxRetry: 3})
	if err != nil {
		t.Fatalf("redis store: %v", err)
	}
	lim := limiter.New(store, limiter.Rate{Period: time.Minute, Limit: 5})

	// Peek on a key never seen: the whole limit, nothing counted.
	if c, err := lim.Peek(ctx, "fresh"); err != nil || c.Limit != 5 || c.Remaining != 5 || c.Reached {
		t.Fatalf("peek on a new key: %+v, %v; want limit 5, 5 remaining, not reached", c, err)
	}
	start := time.Now().Unix()
	for i := 1; i <= 5; i++ {
		c, err := lim.Get(ctx, "user")
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		if c.Limit != 5 || c.Remaining != int64(5-i) || c.Reached {
			t.Fatalf("request %d: %+v; want limit 5, %d remaining, not reached", i, c, 5-i)
		}
		if c.Reset < start+58 || c.Reset > start+62 {
			t.Fatalf("request %d: reset at %d, want about a minute after %d", i, c.Reset, start)
		}
	}
	c, err := lim.Get(ctx, "user")
	if err != nil {
		t.Fatalf("request 6: %v", err)
	}
	if !c.Reached || c.Remaining != 0 {
		t.Fatalf("request 6: %+v; want reached with 0 remaining", c)
	}
	if c, err := lim.Peek(ctx, "user"); err != nil || !c.Reached || c.Remaining != 0 {
		t.Fatalf("peek after the limit: %+v, %v; want reached, 0 remaining", c, err)
	}
	if c, err := lim.Increment(ctx, "other", 3); err != nil || c.Remaining != 2 || c.Reached {
		t.Fatalf("increment by 3: %+v, %v; want 2 remaining", c, err)
	}
	if _, err := lim.Reset(ctx, "user"); err != nil {
		t.Fatalf("reset: %v", err)
	}
	if c, err := lim.Get(ctx, "user"); err != nil || c.Remaining != 4 || c.Reached {
		t.Fatalf("after reset: %+v, %v; want 4 remaining", c, err)
	}
	// The counter is a plain string key holding the count, with a TTL.
	if n, err := rdb.Get(ctx, prefix+"ulule:other").Int(); err != nil || n != 3 {
		t.Fatalf("GET of the counter key: %d, %v; want 3", n, err)
	}
	if ttl, err := rdb.PTTL(ctx, prefix+"ulule:other").Result(); err != nil || ttl <= 50*time.Second || ttl > time.Minute {
		t.Fatalf("PTTL of the counter key: %v, %v; want about a minute", ttl, err)
	}
}

// TestThrottled runs throttled v2's GCRA limiter with its go-redis v9 store
// (TIME + GET in a pipeline, SETNX + EXPIRE, and a compare-and-swap script
// sent with EVAL from the second request on).
func TestThrottled(t *testing.T) {
	addr := serverAddr(t)
	rdb := goRedis(t, addr)
	ctx := testCtx(t, 15*time.Second)
	prefix := keyPrefix(t)

	store, err := goredisstore.NewCtx(rdb, prefix)
	if err != nil {
		t.Fatalf("store: %v", err)
	}
	// 6 per minute (one every 10 s) with a burst of 4: limit 5 at once.
	rl, err := throttled.NewGCRARateLimiterCtx(store, throttled.RateQuota{MaxRate: throttled.PerMin(6), MaxBurst: 4})
	if err != nil {
		t.Fatalf("limiter: %v", err)
	}
	for i := 1; i <= 5; i++ {
		limited, res, err := rl.RateLimitCtx(ctx, "user", 1)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		if limited || res.Limit != 5 || res.Remaining != 5-i || res.RetryAfter != -1 {
			t.Fatalf("request %d: limited %v %+v; want allowed, limit 5, %d remaining, retry-after -1",
				i, limited, res, 5-i)
		}
	}
	limited, res, err := rl.RateLimitCtx(ctx, "user", 1)
	if err != nil {
		t.Fatalf("request 6: %v", err)
	}
	if !limited || res.Remaining != 0 {
		t.Fatalf("request 6: limited %v %+v; want limited, 0 remaining", limited, res)
	}
	if res.RetryAfter < 8*time.Second || res.RetryAfter > 10*time.Second {
		t.Fatalf("request 6: retry-after %v, want about 10 s (8..10 s)", res.RetryAfter)
	}
	if res.ResetAfter < 40*time.Second || res.ResetAfter > 50*time.Second {
		t.Fatalf("request 6: reset-after %v, want about 50 s (40..50 s)", res.ResetAfter)
	}
	// A quantity above the limit is refused without an error.
	if limited, _, err := rl.RateLimitCtx(ctx, "big", 6); err != nil || !limited {
		t.Fatalf("quantity 6 over limit 5: limited %v, %v; want limited", limited, err)
	}
	// The state is one key holding the theoretical arrival time (ns).
	if v, err := rdb.Get(ctx, prefix+"user").Int64(); err != nil || v <= 0 {
		t.Fatalf("GET of the state key: %d, %v; want a positive time in ns", v, err)
	}
}
