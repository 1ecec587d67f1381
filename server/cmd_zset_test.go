package server

import (
	"fmt"
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/turnstile/turnstile/persistence"
)

// TestZSetClient drives the sorted-set commands through go-redis under
// RESP2 and RESP3: the typed replies (doubles, pairs) must decode the same.
func TestZSetClient(t *testing.T) {
	itEachProtocol(t, func(t *testing.T, e *itEnv) {
		ctx, rdb := e.ctx, e.rdb
		must := func(err error) {
			t.Helper()
			if err != nil {
				t.Fatal(err)
			}
		}
		n, err := rdb.ZAdd(ctx, "z", redis.Z{Score: 1, Member: "a"}, redis.Z{Score: 2.5, Member: "b"}, redis.Z{Score: math.Inf(1), Member: "c"}).Result()
		must(err)
		if n != 3 {
			t.Fatalf("ZADD: %d", n)
		}
		if s, err := rdb.ZScore(ctx, "z", "b").Result(); err != nil || s != 2.5 {
			t.Fatalf("ZSCORE: %v %v", s, err)
		}
		if s, err := rdb.ZScore(ctx, "z", "c").Result(); err != nil || !math.IsInf(s, 1) {
			t.Fatalf("ZSCORE inf: %v %v", s, err)
		}
		if _, err := rdb.ZScore(ctx, "z", "nosuch").Result(); err != redis.Nil {
			t.Fatalf("ZSCORE missing: %v", err)
		}
		if s, err := rdb.ZIncrBy(ctx, "z", 0.5, "a").Result(); err != nil || s != 1.5 {
			t.Fatalf("ZINCRBY: %v %v", s, err)
		}
		if s, err := rdb.ZAddArgsIncr(ctx, "z", redis.ZAddArgs{Members: []redis.Z{{Score: 1, Member: "a"}}}).Result(); err != nil || s != 2.5 {
			t.Fatalf("ZADD INCR: %v %v", s, err)
		}
		if _, err := rdb.ZAddArgsIncr(ctx, "z", redis.ZAddArgs{NX: true, Members: []redis.Z{{Score: 1, Member: "a"}}}).Result(); err != redis.Nil {
			t.Fatalf("ZADD NX INCR on a member: %v", err)
		}
		ms, err := rdb.ZMScore(ctx, "z", "a", "nosuch", "b").Result()
		must(err)
		if fmt.Sprint(ms) != "[2.5 0 2.5]" {
			t.Fatalf("ZMSCORE: %v", ms)
		}
		zs, err := rdb.ZRangeWithScores(ctx, "z", 0, -1).Result()
		must(err)
		if fmt.Sprint(zs) != "[{2.5 a} {2.5 b} {+Inf c}]" {
			t.Fatalf("ZRANGE WITHSCORES: %v", zs)
		}
		zs, err = rdb.ZRangeArgsWithScores(ctx, redis.ZRangeArgs{Key: "z", Start: "+inf", Stop: "(1", ByScore: true, Rev: true, Offset: 1, Count: 5}).Result()
		must(err)
		if fmt.Sprint(zs) != "[{2.5 b} {2.5 a}]" {
			t.Fatalf("ZRANGE BYSCORE REV LIMIT: %v", zs)
		}
		if r, err := rdb.ZRevRank(ctx, "z", "a").Result(); err != nil || r != 2 {
			t.Fatalf("ZREVRANK: %v %v", r, err)
		}
		rs, err := rdb.ZRankWithScore(ctx, "z", "b").Result()
		must(err)
		if rs.Rank != 1 || rs.Score != 2.5 {
			t.Fatalf("ZRANK WITHSCORE: %+v", rs)
		}
		if _, err := rdb.ZRankWithScore(ctx, "z", "nosuch").Result(); err != redis.Nil {
			t.Fatalf("ZRANK WITHSCORE missing: %v", err)
		}
		if got := rdb.Do(ctx, "ZRANK", "z", "a", "nope").Err(); got == nil || got.Error() != "ERR syntax error" {
			t.Fatalf("ZRANK bad option: %v", got)
		}
		pop, err := rdb.ZPopMax(ctx, "z").Result()
		must(err)
		if fmt.Sprint(pop) != "[{+Inf c}]" {
			t.Fatalf("ZPOPMAX: %v", pop)
		}
		pop, err = rdb.ZPopMin(ctx, "z", 5).Result()
		must(err)
		if fmt.Sprint(pop) != "[{2.5 a} {2.5 b}]" {
			t.Fatalf("ZPOPMIN 5: %v", pop)
		}
		if n, _ := rdb.Exists(ctx, "z").Result(); n != 0 {
			t.Fatal("popped-empty set still exists")
		}
		must(rdb.ZAdd(ctx, "l", redis.Z{Member: "a"}, redis.Z{Member: "b"}, redis.Z{Member: "c"}).Err())
		lex, err := rdb.ZRangeByLex(ctx, "l", &redis.ZRangeBy{Min: "(a", Max: "+"}).Result()
		must(err)
		if fmt.Sprint(lex) != "[b c]" {
			t.Fatalf("ZRANGEBYLEX: %v", lex)
		}
		rz, err := rdb.ZRandMemberWithScores(ctx, "l", -3).Result()
		must(err)
		if len(rz) != 3 || rz[0].Score != 0 {
			t.Fatalf("ZRANDMEMBER WITHSCORES: %v", rz)
		}
		keys, cur, err := rdb.ZScan(ctx, "l", 0, "", 10).Result()
		must(err)
		if cur != 0 || fmt.Sprint(keys) != "[a 0 b 0 c 0]" {
			t.Fatalf("ZSCAN: %v %d", keys, cur)
		}
		if n, err := rdb.ZRangeStore(ctx, "dst", redis.ZRangeArgs{Key: "l", Start: 0, Stop: 1}).Result(); err != nil || n != 2 {
			t.Fatalf("ZRANGESTORE: %v %v", n, err)
		}
		if typ, _ := rdb.Type(ctx, "dst").Result(); typ != "zset" {
			t.Fatalf("TYPE dst: %s", typ)
		}
	})
}

// TestZSetSlidingLog is the limiter pattern through go-redis: a
// transaction that trims the window, adds the request and counts.
func TestZSetSlidingLog(t *testing.T) {
	itEachProtocol(t, func(t *testing.T, e *itEnv) {
		const window = 1000
		now := int64(1764600000000)
		var last int64
		for i := 0; i < 200; i++ {
			now += 10
			cmds, err := e.rdb.TxPipelined(e.ctx, func(p redis.Pipeliner) error {
				p.ZRemRangeByScore(e.ctx, "rl", "0", strconv.FormatInt(now-window, 10))
				p.ZAdd(e.ctx, "rl", redis.Z{Score: float64(now), Member: strconv.FormatInt(now, 10)})
				p.ZCard(e.ctx, "rl")
				p.PExpire(e.ctx, "rl", window*time.Millisecond)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			last = cmds[2].(*redis.IntCmd).Val()
		}
		if last != 100 {
			t.Fatalf("ZCARD in the window: %d, want 100", last)
		}
		if enc, _ := e.rdb.ObjectEncoding(e.ctx, "rl").Result(); enc != "listpack" {
			t.Fatalf("encoding %s", enc)
		}
	})
}

// TestZSetSurvivesRestart checks sorted sets in both encodings through a
// snapshot and through the append-only log.
func TestZSetSurvivesRestart(t *testing.T) {
	fill := func(r *restartable) {
		r.expect(":4\r\n", "ZADD", "small", "1", "a", "-0", "zero", "inf", "1764600000000", "5", "5-suffix")
		r.expect("$3\r\n3.5\r\n", "ZINCRBY", "small", "2.5", "a")
		for i := 0; i < 200; i++ {
			r.rc.do("ZADD", "big", strconv.Itoa(i%17), "m"+strconv.Itoa(i))
		}
		r.expect(":1\r\n", "ZREM", "big", "m5")
		r.expect(":10\r\n", "ZREMRANGEBYRANK", "big", "0", "9")
		r.expect(":1\r\n", "ZADD", "big", "-0", "negzero")
		r.expect("*2\r\n$3\r\nm68\r\n$1\r\n0\r\n", "ZPOPMIN", "big")
		r.expect(":1\r\n", "ZADD", "gone", "1", "x")
		r.expect(":1\r\n", "ZREMRANGEBYSCORE", "gone", "-inf", "+inf")
		r.expect(":1\r\n", "PEXPIRE", "small", "100000")
		r.expect(":1\r\n", "ZADD", "small", "7", "kept-ttl")
	}
	dump := func(r *restartable) []string {
		var out []string
		for _, k := range []string{"small", "big"} {
			out = append(out, r.rc.do("OBJECT", "ENCODING", k), r.rc.do("ZRANGE", k, "0", "-1", "WITHSCORES"), r.rc.do("ZSCAN", k, "0"))
		}
		return append(out, r.rc.do("EXISTS", "gone"), r.rc.do("PTTL", "small"))
	}
	for _, aof := range []bool{false, true} {
		t.Run(fmt.Sprintf("appendonly=%v", aof), func(t *testing.T) {
			r := newRestartable(t, func(c *Config) { c.Persist.AppendOnly = aof })
			fill(r)
			before := dump(r)
			if before[0] != "$8\r\nlistpack\r\n" || before[3] != "$8\r\nskiplist\r\n" {
				t.Fatalf("encodings before: %q %q", before[0], before[3])
			}
			if ttl := before[len(before)-1]; ttl != ":100000\r\n" {
				t.Fatalf("PTTL before: %q", ttl)
			}
			if !aof {
				r.expect("+OK\r\n", "SAVE")
			}
			r.restart()
			after := dump(r)
			for i := range before {
				if after[i] != before[i] {
					t.Errorf("reply %d after restart: %.200q, before: %.200q", i, after[i], before[i])
				}
			}
		})
	}
}

// BenchmarkZSetSlidingLogPath is the sliding-log limiter on one 50-member
// key through the in-process command path: as a transaction (MULTI,
// ZREMRANGEBYSCORE, ZADD, ZCARD, PEXPIRE, EXEC) and as the same four
// commands without MULTI (the sorted-set handlers alone, which must not
// allocate).
func BenchmarkZSetSlidingLogPath(b *testing.B) {
	for _, multi := range []bool{true, false} {
		name := "multi"
		if !multi {
			name = "plain"
		}
		b.Run(name, func(b *testing.B) { benchSlidingLog(b, multi) })
	}
}

func benchSlidingLog(b *testing.B, multi bool) {
	s, c := newPathClient(b)
	const window = 1000
	now := int64(1764600000000)
	var req []byte
	var nb, mb [24]byte
	send := func(args ...[]byte) {
		req = append(req[:0], '*')
		req = strconv.AppendInt(req, int64(len(args)), 10)
		req = append(req, "\r\n"...)
		for _, a := range args {
			req = append(req, '$')
			req = strconv.AppendInt(req, int64(len(a)), 10)
			req = append(req, "\r\n"...)
			req = append(req, a...)
			req = append(req, "\r\n"...)
		}
		feed(b, s, c, req)
	}
	var (
		multiCmd = []byte("MULTI")
		zrem     = []byte("ZREMRANGEBYSCORE")
		zadd     = []byte("ZADD")
		zcard    = []byte("ZCARD")
		pexp     = []byte("PEXPIRE")
		exec     = []byte("EXEC")
		key      = []byte("ratelimit:user:42")
		zero     = []byte("0")
		win      = []byte(strconv.Itoa(window))
	)
	tick := func() {
		now += window / 50
		n := strconv.AppendInt(nb[:0], now, 10)
		m := strconv.AppendInt(mb[:0], now-window, 10)
		if multi {
			send(multiCmd)
		}
		send(zrem, key, zero, m)
		send(zadd, key, n, n)
		send(zcard, key)
		send(pexp, key, win)
		if multi {
			send(exec)
		}
	}
	for i := 0; i < 100; i++ {
		tick()
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		tick()
	}
}

// TestZSetPathAllocs guards the sliding-log path: on a packed 50-member
// key, ZREMRANGEBYSCORE, ZADD and ZCARD and the common reads allocate
// nothing, without a log and with the append-only log on.
func TestZSetPathAllocs(t *testing.T) {
	for _, aof := range []bool{false, true} {
		t.Run("aof="+strconv.FormatBool(aof), func(t *testing.T) {
			s, c := newPathClient(t, func(cfg *Config) {
				cfg.Shards = 16
				if aof {
					cfg.Persist.AppendOnly = true
					cfg.Persist.AppendFsync = persistence.FsyncNo
					cfg.Persist.Dir = t.TempDir()
				}
			})
			const window = 1000
			now := int64(1764600000000)
			var req []byte
			var nb, mb [24]byte
			send := func(args ...[]byte) {
				req = append(req[:0], '*')
				req = strconv.AppendInt(req, int64(len(args)), 10)
				req = append(req, "\r\n"...)
				for _, a := range args {
					req = append(req, '$')
					req = strconv.AppendInt(req, int64(len(a)), 10)
					req = append(req, "\r\n"...)
					req = append(req, a...)
					req = append(req, "\r\n"...)
				}
				feed(t, s, c, req)
			}
			var (
				key   = []byte("rl")
				zero  = []byte("0")
				minus = []byte("-1")
				inf   = []byte("+inf")
				ws    = []byte("WITHSCORES")
				cmds  = [][]byte{[]byte("ZREMRANGEBYSCORE"), []byte("ZADD"), []byte("ZCARD"), []byte("ZSCORE"),
					[]byte("ZRANGE"), []byte("ZRANGEBYSCORE"), []byte("ZRANK"), []byte("ZCOUNT")}
			)
			tick := func() {
				now += window / 50
				n := strconv.AppendInt(nb[:0], now, 10)
				m := strconv.AppendInt(mb[:0], now-window, 10)
				send(cmds[0], key, zero, m)
				send(cmds[1], key, n, n)
				send(cmds[2], key)
				send(cmds[3], key, n)
				send(cmds[4], key, zero, minus, ws)
				send(cmds[5], key, m, inf, ws)
				send(cmds[6], key, n)
				send(cmds[7], key, m, inf)
			}
			for i := 0; i < 100; i++ {
				tick()
			}
			if allocs := testing.AllocsPerRun(300, tick); allocs != 0 {
				t.Fatalf("sorted-set path: %.2f allocations per round, want 0", allocs)
			}
		})
	}
}
