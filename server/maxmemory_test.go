package server

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// infoInt reads one integer field of INFO.
func infoInt(t *testing.T, rc *redis.Client, field string) int64 {
	t.Helper()
	info, err := rc.Info(context.Background(), "memory", "stats").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatalf("INFO %s: %q", field, v)
			}
			return n
		}
	}
	t.Fatalf("INFO has no %s", field)
	return 0
}

// limitAbove sets maxmemory to extra bytes above what is used now, under
// policy, and returns the limit.
func limitAbove(t *testing.T, rc *redis.Client, extra int64, policy string) int64 {
	t.Helper()
	ctx := context.Background()
	limit := infoInt(t, rc, "used_memory") + extra
	if err := rc.ConfigSet(ctx, "maxmemory-policy", policy).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rc.ConfigSet(ctx, "maxmemory", strconv.FormatInt(limit, 10)).Err(); err != nil {
		t.Fatal(err)
	}
	return limit
}

// throttleKeys sends CL.THROTTLE for keys prefix0..prefix(n-1), pipelined,
// with a one-day period (each key lives a day), and returns how many were
// refused with OOM.
func throttleKeys(t *testing.T, rc *redis.Client, prefix string, from, n int) (oom int) {
	t.Helper()
	ctx := context.Background()
	for lo := from; lo < from+n; lo += 1000 {
		p := rc.Pipeline()
		for i := lo; i < min(lo+1000, from+n); i++ {
			p.Do(ctx, "CL.THROTTLE", prefix+strconv.Itoa(i), 10, 100, 86400)
		}
		cmds, _ := p.Exec(ctx)
		for _, c := range cmds {
			if err := c.Err(); err != nil {
				if !strings.HasPrefix(err.Error(), "OOM command not allowed when used memory > 'maxmemory'.") {
					t.Fatalf("CL.THROTTLE: %v", err)
				}
				oom++
			}
		}
	}
	return oom
}

func TestMaxmemoryEvictionKeepsTheLimit(t *testing.T) {
	for _, policy := range []string{"allkeys-lru", "allkeys-lfu", "allkeys-random", "volatile-lru", "volatile-lfu", "volatile-random", "volatile-ttl"} {
		t.Run(policy, func(t *testing.T) {
			s, addr, _ := newTestServer(t)
			rc := keysClient(t, addr)
			limit := limitAbove(t, rc, 2<<20, policy)
			const n = 100_000 // about 5 MB of GCRA keys
			if oom := throttleKeys(t, rc, "rl:", 0, n); oom != 0 {
				t.Fatalf("%d CL.THROTTLE refused under %s", oom, policy)
			}
			used, evicted := infoInt(t, rc, "used_memory"), infoInt(t, rc, "evicted_keys")
			// One command's growth may pass the limit before the next
			// command evicts; a table growing its slot array is the most.
			if used > limit+limit/50 {
				t.Errorf("used_memory %d, maxmemory %d", used, limit)
			}
			keys := rc.DBSize(context.Background()).Val()
			t.Logf("%s: used %d of %d, %d keys, %d evicted", policy, used, limit, keys, evicted)
			if evicted == 0 || keys+evicted+s.dbs[0].ExpiredKeys() != n {
				t.Errorf("%d keys, %d evicted: not %d", keys, evicted, n)
			}
		})
	}
}

// Under LRU, the keys in use survive a flood of new ones.
func TestMaxmemoryLRUKeepsHotKeys(t *testing.T) {
	s, addr, clk := newTestServer(t)
	rc := keysClient(t, addr)
	ctx := context.Background()
	// The test's own client shares the process: its runtime overhead counts
	// too, so the limit leaves room well beyond it.
	limitAbove(t, rc, 6<<20, "allkeys-lru")
	if err := rc.ConfigSet(ctx, "maxmemory-samples", "10").Err(); err != nil {
		t.Fatal(err)
	}
	const hot = 100
	throttleKeys(t, rc, "hot:", 0, hot)
	lost := 0
	for round := range 30 {
		clk.Advance(2 * time.Second)
		s.setAccessClocks()
		throttleKeys(t, rc, "hot:", 0, hot) // the hot clients come back
		throttleKeys(t, rc, "flood:", round*10_000, 10_000)
		for i := range hot { // an evicted hot key would come back next round
			if rc.Exists(ctx, "hot:"+strconv.Itoa(i)).Val() == 0 {
				lost++
			}
		}
	}
	if ev := infoInt(t, rc, "evicted_keys"); ev < 50_000 {
		t.Fatalf("only %d keys evicted: the flood did not reach the limit", ev)
	}
	if keys := rc.DBSize(ctx).Val(); keys < 40_000 {
		t.Fatalf("only %d keys fit: the flood's rounds do not overlap in memory", keys)
	}
	// A hot key is at most a round old when the flood's oldest keys are
	// several rounds old: with 10 samples, it goes only if all 10 are of
	// the last round.
	if lost > 2 {
		t.Errorf("%d hot keys evicted in 30 rounds", lost)
	}
}

func TestMaxmemoryVolatileSparesKeysWithoutExpiry(t *testing.T) {
	_, addr, _ := newTestServer(t)
	rc := keysClient(t, addr)
	ctx := context.Background()
	for i := range 1000 {
		rc.Set(ctx, "keep:"+strconv.Itoa(i), "v", 0)
	}
	limit := limitAbove(t, rc, 1<<20, "volatile-random")
	throttleKeys(t, rc, "rl:", 0, 60_000)
	for i := range 1000 {
		if rc.Exists(ctx, "keep:"+strconv.Itoa(i)).Val() == 0 {
			t.Fatalf("keep:%d (no expiry) was evicted under volatile-random", i)
		}
	}
	if used := infoInt(t, rc, "used_memory"); used > limit+limit/50 {
		t.Errorf("used_memory %d, maxmemory %d", used, limit)
	}
	// With only keys without expiry left to evict, writes are refused.
	rc.FlushAll(ctx)
	for i := range 1000 {
		rc.Set(ctx, "keep:"+strconv.Itoa(i), strings.Repeat("x", 1000), 0)
	}
	limitAbove(t, rc, -(512 << 10), "volatile-lru") // well below: the runtime overhead term moves by ~100 kB
	if err := rc.Set(ctx, "one-more", "v", 0).Err(); err == nil || !strings.HasPrefix(err.Error(), "OOM ") {
		t.Fatalf("SET with nothing evictable: %v", err)
	}
	if rc.Get(ctx, "keep:1").Val() == "" {
		t.Fatal("GET refused at the limit")
	}
}

func TestMaxmemoryNoevictionRefusesWritesNotReads(t *testing.T) {
	_, addr, _ := newTestServer(t)
	rc := keysClient(t, addr)
	ctx := context.Background()
	rc.Set(ctx, "existing", "v", 0)
	limitAbove(t, rc, 1<<20, "noeviction")
	oom := throttleKeys(t, rc, "rl:", 0, 50_000)
	if oom == 0 {
		t.Fatal("50,000 new keys fit in 1 MB")
	}
	if got := rc.Get(ctx, "existing").Val(); got != "v" {
		t.Fatalf("GET at the limit: %q", got)
	}
	// Well over the limit from here on (the runtime overhead term moves).
	used := infoInt(t, rc, "used_memory")
	if err := rc.ConfigSet(ctx, "maxmemory", strconv.FormatInt(used-(512<<10), 10)).Err(); err != nil {
		t.Fatal(err)
	}
	// CL.THROTTLE has no deny-oom flag (as in redis-cell): buckets already
	// in memory go on being limited; only a new bucket is refused.
	for i := range 20 {
		r, err := rc.Do(ctx, "CL.THROTTLE", "rl:0", 10, 100, 86400).Slice()
		if err != nil {
			t.Fatalf("CL.THROTTLE of an existing bucket at the limit: %v", err)
		}
		if limited := r[0].(int64); (i >= 10) != (limited == 1) {
			t.Fatalf("request %d of a bucket with 10 left: limited %d", i, limited)
		}
	}
	if err := rc.Do(ctx, "CL.THROTTLE", "brand-new", 10, 100, 86400).Err(); err == nil || !strings.HasPrefix(err.Error(), "OOM ") {
		t.Fatalf("CL.THROTTLE of a new bucket at the limit: %v", err)
	}
	if err := rc.Eval(ctx, "return redis.call('CL.THROTTLE', KEYS[1], 10, 100, 86400)", []string{"rl:1"}).Err(); err != nil {
		t.Fatalf("CL.THROTTLE of an existing bucket from a script: %v", err)
	}
	if err := rc.Eval(ctx, "return redis.call('CL.THROTTLE', KEYS[1], 10, 100, 86400)", []string{"new2"}).Err(); err == nil || !strings.Contains(err.Error(), "OOM ") {
		t.Fatalf("CL.THROTTLE of a new bucket from a script: %v", err)
	}
	if infoInt(t, rc, "evicted_keys") != 0 {
		t.Fatal("noeviction evicted")
	}
	// Deleting makes room again.
	if err := rc.FlushDB(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rc.Set(ctx, "after", "v", 0).Err(); err != nil {
		t.Fatalf("SET after FLUSHDB: %v", err)
	}
	if err := rc.ConfigSet(ctx, "maxmemory", "0").Err(); err != nil {
		t.Fatal(err)
	}
}

// Evicted keys are deletes in the append-only log: a restart does not
// bring them back.
func TestEvictionsAreLogged(t *testing.T) {
	r := newRestartable(t, func(c *Config) { c.Persist.AppendOnly = true })
	rc := keysClient(t, r.rc.c.RemoteAddr().String())
	limitAbove(t, rc, 1<<20, "allkeys-random")
	throttleKeys(t, rc, "rl:", 0, 40_000)
	keys := rc.DBSize(context.Background()).Val()
	if infoInt(t, rc, "evicted_keys") == 0 {
		t.Fatal("nothing evicted")
	}
	r.restart()
	if got := r.rc.do("DBSIZE"); got != fmt.Sprintf(":%d\r\n", keys) {
		t.Fatalf("DBSIZE after restart %q, want %d", got, keys)
	}
}

// OBJECT IDLETIME follows accesses under an LRU policy.
func TestObjectIdleTime(t *testing.T) {
	s, addr, clk := newTestServer(t)
	rc := keysClient(t, addr)
	ctx := context.Background()
	rc.ConfigSet(ctx, "maxmemory-policy", "allkeys-lru")
	s.setAccessClocks()
	rc.Set(ctx, "a", "1", 0)
	clk.Advance(42 * time.Second)
	s.setAccessClocks()
	if got := rc.ObjectIdleTime(ctx, "a").Val(); got != 42*time.Second {
		t.Fatalf("idle %v, want 42s", got)
	}
	rc.Get(ctx, "a")
	if got := rc.ObjectIdleTime(ctx, "a").Val(); got != 0 {
		t.Fatalf("idle after GET %v, want 0", got)
	}
}

// A collection growing in place counts: one hash fed field after field
// reaches the limit like many keys do.
func TestMaxmemoryCountsGrowingCollections(t *testing.T) {
	_, addr, _ := newTestServer(t)
	rc := keysClient(t, addr)
	ctx := context.Background()
	before := infoInt(t, rc, "used_memory")
	limitAbove(t, rc, 2<<20, "noeviction")
	refused := false
	for lo := 0; lo < 200_000 && !refused; lo += 1000 {
		p := rc.Pipeline()
		for i := lo; i < lo+1000; i++ {
			p.HSet(ctx, "big", "field:"+strconv.Itoa(i), "value")
		}
		cmds, _ := p.Exec(ctx)
		for _, c := range cmds {
			if err := c.Err(); err != nil {
				if !strings.HasPrefix(err.Error(), "OOM ") {
					t.Fatal(err)
				}
				refused = true
			}
		}
	}
	if !refused {
		t.Fatal("a hash of 200,000 fields fit in 2 MB")
	}
	if grew := infoInt(t, rc, "used_memory_dataset"); grew < 1<<20 {
		t.Fatalf("used_memory_dataset %d after filling (used_memory was %d)", grew, before)
	}
	// The hash is one key: deleting it gives the memory back.
	rc.Del(ctx, "big")
	if d := infoInt(t, rc, "used_memory_dataset"); d > 64<<10 {
		t.Fatalf("used_memory_dataset %d after deleting the hash", d)
	}
}
