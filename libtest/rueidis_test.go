package libtest

import (
	"crypto/sha1"
	"encoding/hex"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/redis/rueidis"
)

// TestRueidis runs rueidis with its default options (RESP3, client-side
// caching on) through plain commands, a cached read, and Lua scripts through
// NewLuaScript, whose Exec sends EVALSHA and falls back to EVAL on NOSCRIPT.
func TestRueidis(t *testing.T) {
	addr := serverAddr(t)
	ctx := testCtx(t, 10*time.Second)
	prefix := keyPrefix(t)
	client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}})
	if err != nil {
		t.Fatalf("rueidis client: %v", err)
	}
	defer client.Close()

	k := prefix + "counter"
	if err := client.Do(ctx, client.B().Set().Key(k).Value("10").Build()).Error(); err != nil {
		t.Fatalf("SET: %v", err)
	}
	if n, err := client.Do(ctx, client.B().Incrby().Key(k).Increment(5).Build()).AsInt64(); err != nil || n != 15 {
		t.Fatalf("INCRBY: %d, %v; want 15", n, err)
	}
	if v, err := client.DoCache(ctx, client.B().Get().Key(k).Cache(), time.Minute).ToString(); err != nil || v != "15" {
		t.Fatalf("cached GET: %q, %v; want 15", v, err)
	}
	h := prefix + "hash"
	if err := client.Do(ctx, client.B().Hset().Key(h).FieldValue().FieldValue("a", "1").FieldValue("b", "2").Build()).Error(); err != nil {
		t.Fatalf("HSET: %v", err)
	}
	if m, err := client.Do(ctx, client.B().Hgetall().Key(h).Build()).AsStrMap(); err != nil || !reflect.DeepEqual(m, map[string]string{"a": "1", "b": "2"}) {
		t.Fatalf("HGETALL: %v, %v", m, err)
	}

	// The script text carries the test's unique prefix, so the server has
	// never seen it: the first Exec gets NOSCRIPT and falls back to EVAL.
	src := "-- libtest " + prefix + "\n" +
		"local n = redis.call('INCRBY', KEYS[1], ARGV[1])\n" +
		"return {n, redis.call('GET', KEYS[1]), ARGV[2], 'done'}\n"
	sum := sha1.Sum([]byte(src))
	sha := hex.EncodeToString(sum[:])
	exists := func() int64 {
		t.Helper()
		ex, err := client.Do(ctx, client.B().ScriptExists().Sha1(sha).Build()).AsIntSlice()
		if err != nil || len(ex) != 1 {
			t.Fatalf("SCRIPT EXISTS: %v, %v", ex, err)
		}
		return ex[0]
	}
	if exists() != 0 {
		t.Fatal("SCRIPT EXISTS: the new script is already known")
	}
	script := rueidis.NewLuaScript(src)
	s := prefix + "scripted"
	for i, want := range []int64{3, 6} {
		vals, err := script.Exec(ctx, client, []string{s}, []string{"3", "tag"}).ToArray()
		if err != nil || len(vals) != 4 {
			t.Fatalf("script run %d: %v, %v; want 4 values", i+1, vals, err)
		}
		n, err1 := vals[0].AsInt64()
		got, err2 := vals[1].ToString()
		tag, err3 := vals[2].ToString()
		done, err4 := vals[3].ToString()
		if err1 != nil || err2 != nil || err3 != nil || err4 != nil || n != want || got != strconv.FormatInt(want, 10) || tag != "tag" || done != "done" {
			t.Fatalf("script run %d: %v (%v %v %v %v); want [%d %d tag done]", i+1, vals, err1, err2, err3, err4, want, want)
		}
		if exists() != 1 {
			t.Fatalf("SCRIPT EXISTS after run %d: the script is not cached", i+1)
		}
	}

	// A read-only script goes through EVALSHA_RO / EVAL_RO.
	ro := rueidis.NewLuaScriptReadOnly("-- libtest ro " + prefix + "\nreturn redis.call('GET', KEYS[1])\n")
	if v, err := ro.Exec(ctx, client, []string{s}, nil).ToString(); err != nil || v != "6" {
		t.Fatalf("read-only script: %q, %v; want 6", v, err)
	}
	// A script's error reply reaches the caller as a Redis error.
	bad := rueidis.NewLuaScript("-- libtest err " + prefix + "\nreturn redis.error_reply('LIBTEST custom failure')\n")
	err = bad.Exec(ctx, client, nil, nil).Error()
	if rerr, ok := rueidis.IsRedisErr(err); !ok || rerr.Error() != "LIBTEST custom failure" {
		t.Fatalf("error_reply script: %v; want the Redis error \"LIBTEST custom failure\"", err)
	}
}
