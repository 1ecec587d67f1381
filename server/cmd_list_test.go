package server

import (
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestIntegrationListCommands(t *testing.T) {
	itEachProtocol(t, func(t *testing.T, e *itEnv) {
		ctx, r := e.ctx, e.rdb
		if n, err := r.RPush(ctx, "l", "a", "b", "c").Result(); err != nil || n != 3 {
			t.Fatalf("RPUSH: %d %v", n, err)
		}
		if n, _ := r.LPush(ctx, "l", "z").Result(); n != 4 {
			t.Fatalf("LPUSH: %d", n)
		}
		if got, _ := r.LRange(ctx, "l", 0, -1).Result(); !reflect.DeepEqual(got, []string{"z", "a", "b", "c"}) {
			t.Fatalf("LRANGE: %q", got)
		}
		if got, err := r.LPopCount(ctx, "l", 2).Result(); err != nil || !reflect.DeepEqual(got, []string{"z", "a"}) {
			t.Fatalf("LPOP 2: %q %v", got, err)
		}
		if got, err := r.RPopCount(ctx, "l", 5).Result(); err != nil || !reflect.DeepEqual(got, []string{"c", "b"}) {
			t.Fatalf("RPOP 5: %q %v", got, err)
		}
		if n, _ := r.Exists(ctx, "l").Result(); n != 0 {
			t.Fatal("an emptied list is still there")
		}
		// Null shapes: a missing key gives nil for both forms.
		if _, err := r.LPop(ctx, "l").Result(); !errors.Is(err, redis.Nil) {
			t.Fatalf("LPOP missing: %v", err)
		}
		if _, err := r.LPopCount(ctx, "l", 2).Result(); !errors.Is(err, redis.Nil) {
			t.Fatalf("LPOP missing 2: %v", err)
		}
		if _, err := r.LIndex(ctx, "l", 0).Result(); !errors.Is(err, redis.Nil) {
			t.Fatalf("LINDEX missing: %v", err)
		}
		if n, _ := r.LPushX(ctx, "l", "x").Result(); n != 0 {
			t.Fatal("LPUSHX created a key")
		}

		for i := range 1000 {
			r.RPush(ctx, "big", strconv.Itoa(i%10))
		}
		if enc, _ := r.ObjectEncoding(ctx, "big").Result(); enc != "listpack" {
			t.Fatalf("OBJECT ENCODING of 1000 small integers: %s", enc)
		}
		r.RPush(ctx, "big", strings.Repeat("x", 8000))
		if enc, _ := r.ObjectEncoding(ctx, "big").Result(); enc != "quicklist" {
			t.Fatalf("OBJECT ENCODING past 8 KiB: %s", enc)
		}
		r.RPop(ctx, "big")
		if enc, _ := r.ObjectEncoding(ctx, "big").Result(); enc != "listpack" {
			t.Fatalf("OBJECT ENCODING back under 4 KiB: %s", enc)
		}
		if n, _ := r.MemoryUsage(ctx, "big").Result(); n <= 0 || n > 16<<10 {
			t.Fatalf("MEMORY USAGE of 1000 small integers: %d", n)
		}
		if got, _ := r.LPos(ctx, "big", "3", redis.LPosArgs{Rank: -2}).Result(); got != 983 {
			t.Fatalf("LPOS RANK -2: %d", got)
		}
		if got, _ := r.LPosCount(ctx, "big", "3", 3, redis.LPosArgs{MaxLen: 20}).Result(); !reflect.DeepEqual(got, []int64{3, 13}) {
			t.Fatalf("LPOS COUNT 3 MAXLEN 20: %v", got)
		}
		if _, err := r.LPos(ctx, "big", "nope", redis.LPosArgs{}).Result(); !errors.Is(err, redis.Nil) {
			t.Fatalf("LPOS no match: %v", err)
		}
		if n, _ := r.LRem(ctx, "big", -50, "7").Result(); n != 50 {
			t.Fatalf("LREM: %d", n)
		}
		if n, _ := r.LInsertAfter(ctx, "big", "9", "nine").Result(); n != 951 {
			t.Fatalf("LINSERT: %d", n)
		}
		if err := r.LSet(ctx, "big", -1, "last").Err(); err != nil {
			t.Fatal(err)
		}
		if err := r.LTrim(ctx, "big", 5, -5).Err(); err != nil {
			t.Fatal(err)
		}
		if n, _ := r.LLen(ctx, "big").Result(); n != 942 {
			t.Fatalf("LLEN after LTRIM: %d", n)
		}
		// LMOVE on one key rotates it.
		r.RPush(ctx, "rot", "1", "2", "3")
		if v, _ := r.LMove(ctx, "rot", "rot", "LEFT", "RIGHT").Result(); v != "1" {
			t.Fatalf("LMOVE: %q", v)
		}
		if v, _ := r.RPopLPush(ctx, "rot", "rot").Result(); v != "1" {
			t.Fatalf("RPOPLPUSH: %q", v)
		}
		if got, _ := r.LRange(ctx, "rot", 0, -1).Result(); !reflect.DeepEqual(got, []string{"1", "2", "3"}) {
			t.Fatalf("after rotations: %q", got)
		}
		r.Set(ctx, "str", "v", 0)
		if err := r.RPush(ctx, "str", "x").Err(); err == nil || !strings.HasPrefix(err.Error(), "WRONGTYPE") {
			t.Fatalf("RPUSH on a string: %v", err)
		}
		if err := r.LMove(ctx, "rot", "str", "LEFT", "LEFT").Err(); err == nil || !strings.HasPrefix(err.Error(), "WRONGTYPE") {
			t.Fatalf("LMOVE to a string: %v", err)
		}
		if n, _ := r.LLen(ctx, "rot").Result(); n != 3 {
			t.Fatal("a failed LMOVE popped")
		}
	})
}

func TestIntegrationStreamCommands(t *testing.T) {
	itEachProtocol(t, func(t *testing.T, e *itEnv) {
		ctx, r := e.ctx, e.rdb
		ms := testEpoch / 1e6
		// XADD * takes the server clock's milliseconds; the same
		// millisecond again increments the sequence.
		for i, want := range []string{fmt.Sprintf("%d-0", ms), fmt.Sprintf("%d-1", ms)} {
			id, err := r.XAdd(ctx, &redis.XAddArgs{Stream: "s", Values: []string{"f", strconv.Itoa(i)}}).Result()
			if err != nil || id != want {
				t.Fatalf("XADD *: %q %v, want %q", id, err, want)
			}
		}
		e.clk.Advance(5 * time.Millisecond)
		if id, _ := r.XAdd(ctx, &redis.XAddArgs{Stream: "s", Values: []string{"f", "2"}}).Result(); id != fmt.Sprintf("%d-0", ms+5) {
			t.Fatalf("XADD * after 5 ms: %q", id)
		}
		// An explicit ID ahead of the clock: * then follows the last ID.
		far := fmt.Sprintf("%d-7", ms+1000)
		if id, _ := r.XAdd(ctx, &redis.XAddArgs{Stream: "s", ID: far, Values: []string{"f", "3"}}).Result(); id != far {
			t.Fatalf("XADD explicit: %q", id)
		}
		if id, _ := r.XAdd(ctx, &redis.XAddArgs{Stream: "s", Values: []string{"f", "4"}}).Result(); id != fmt.Sprintf("%d-8", ms+1000) {
			t.Fatalf("XADD * behind the last ID: %q", id)
		}
		if err := r.XAdd(ctx, &redis.XAddArgs{Stream: "s", ID: "1-1", Values: []string{"f", "v"}}).Err(); err == nil ||
			err.Error() != "ERR The ID specified in XADD is equal or smaller than the target stream top item" {
			t.Fatalf("XADD small ID: %v", err)
		}
		if _, err := r.XAdd(ctx, &redis.XAddArgs{Stream: "none", NoMkStream: true, Values: []string{"f", "v"}}).Result(); !errors.Is(err, redis.Nil) {
			t.Fatalf("XADD NOMKSTREAM: %v", err)
		}
		msgs, err := r.XRange(ctx, "s", "-", "+").Result()
		if err != nil || len(msgs) != 5 || msgs[3].ID != far || msgs[3].Values["f"] != "3" {
			t.Fatalf("XRANGE: %v %v", msgs, err)
		}
		msgs, _ = r.XRevRangeN(ctx, "s", "+", "("+far, 10).Result()
		if len(msgs) != 1 || msgs[0].Values["f"] != "4" {
			t.Fatalf("XREVRANGE exclusive: %v", msgs)
		}
		if n, _ := r.XDel(ctx, "s", far, "9-9").Result(); n != 1 {
			t.Fatalf("XDEL: %d", n)
		}
		if n, _ := r.XTrimMaxLen(ctx, "s", 2).Result(); n != 2 {
			t.Fatalf("XTRIM MAXLEN: %d", n)
		}
		// "~" trims exactly here (Redis would keep a partial node).
		if id, err := r.XAdd(ctx, &redis.XAddArgs{Stream: "s", MaxLen: 1, Approx: true, ID: "*", Values: []string{"f", "5"}}).Result(); err != nil || id == "" {
			t.Fatalf("XADD MAXLEN ~: %q %v", id, err)
		}
		if n, _ := r.XLen(ctx, "s").Result(); n != 1 {
			t.Fatalf("XLEN after MAXLEN ~ 1: %d", n)
		}
		if n, _ := r.XTrimMinID(ctx, "s", "+").Result(); n != 0 {
			t.Logf("XTRIM MINID +: %d", n)
		}
		if n, _ := r.XTrimMaxLen(ctx, "s", 0).Result(); n != 1 {
			t.Fatalf("XTRIM MAXLEN 0: %d", n)
		}
		if typ, _ := r.Type(ctx, "s").Result(); typ != "stream" {
			t.Fatalf("an empty stream is %q, want it kept", typ)
		}
	})
}

// TestListAndStreamPersist checks that lists (both forms) and streams
// (with a last ID past their entries, and an ID XADD * took from the
// clock) survive a snapshot and a log replay.
func TestListAndStreamPersist(t *testing.T) {
	for _, aof := range []bool{false, true} {
		t.Run(map[bool]string{false: "snapshot", true: "appendonly"}[aof], func(t *testing.T) {
			r := newRestartable(t, func(c *Config) { c.Persist.AppendOnly = aof })
			r.expect(":3\r\n", "RPUSH", "small", "a", "b", "c")
			r.expect("$1\r\na\r\n", "LMOVE", "small", "small", "LEFT", "RIGHT")
			for i := range 3000 {
				r.rc.do("RPUSH", "big", "element-"+strconv.Itoa(i))
			}
			r.expect("$9\r\nelement-0\r\n", "LPOP", "big")
			r.expect(":1\r\n", "LREM", "big", "0", "element-5")
			r.expect("+OK\r\n", "LTRIM", "big", "0", "-2")
			r.expect(":2998\r\n", "LINSERT", "big", "BEFORE", "element-7", "new")
			r.expect("$3\r\n1-1\r\n", "XADD", "s", "1-1", "f", "v")
			r.expect("$3\r\n2-1\r\n", "XADD", "s", "MAXLEN", "5", "2-1", "g", "w", "h", "")
			star := strconv.FormatInt(testEpoch/1e6, 10) + "-0"
			r.expect("$"+strconv.Itoa(len(star))+"\r\n"+star+"\r\n", "XADD", "s", "*", "k", "v")
			r.expect("$3\r\n3-1\r\n", "XADD", "e", "3-1", "f", "v")
			r.expect(":1\r\n", "XDEL", "s", star)
			r.expect(":1\r\n", "XDEL", "e", "3-1") // an empty stream stays
			reads := [][]string{
				{"LRANGE", "small", "0", "-1"}, {"LLEN", "big"}, {"LRANGE", "big", "0", "9"},
				{"LRANGE", "big", "-3", "-1"}, {"LINDEX", "big", "1500"}, {"XRANGE", "s", "-", "+"},
				{"XLEN", "e"}, {"TYPE", "e"}, {"OBJECT", "ENCODING", "small"}, {"OBJECT", "ENCODING", "big"},
				{"XADD", "s", star, "f", "v"}, {"XADD", "e", "3-1", "f", "v"},
			}
			before := make([]string, len(reads))
			for i, c := range reads {
				before[i] = r.rc.do(c...)
			}
			if !aof {
				r.expect("+OK\r\n", "SAVE")
			}
			r.clk.Advance(10 * time.Second)
			r.restart()
			for i, c := range reads {
				if got := r.rc.do(c...); got != before[i] {
					t.Errorf("%v after restart: %q, before %q", c, got, before[i])
				}
			}
		})
	}
}
