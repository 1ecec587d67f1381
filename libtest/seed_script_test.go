package libtest

import (
	"crypto/sha1"
	"encoding/hex"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"
)

// seedScriptFile is the token-bucket script of seed 000 §6, byte for byte
// (KEYS[1] = bucket; ARGV = rate per second, burst, now in ms, cost; returns
// {allowed, whole tokens left}).
const seedScriptFile = "testdata/seed000-token-bucket.lua"

// TestSeedTokenBucket loads the seed's token-bucket script with SCRIPT LOAD
// and runs it with EVALSHA. The caller passes the clock, so every reply and
// every stored field is known exactly.
func TestSeedTokenBucket(t *testing.T) {
	src, err := os.ReadFile(seedScriptFile)
	if err != nil {
		t.Fatalf("read the seed script: %v", err)
	}
	addr := serverAddr(t)
	rdb := goRedis(t, addr)
	ctx := testCtx(t, 10*time.Second)
	prefix := keyPrefix(t)

	sum := sha1.Sum(src)
	wantSHA := hex.EncodeToString(sum[:])
	sha, err := rdb.ScriptLoad(ctx, string(src)).Result()
	if err != nil {
		t.Fatalf("SCRIPT LOAD: %v", err)
	}
	if sha != wantSHA {
		t.Fatalf("SCRIPT LOAD returned %s, want the SHA1 of the text %s", sha, wantSHA)
	}
	if ex, err := rdb.ScriptExists(ctx, sha, strings.Repeat("0", 40)).Result(); err != nil || !reflect.DeepEqual(ex, []bool{true, false}) {
		t.Fatalf("SCRIPT EXISTS loaded, unknown: %v, %v; want [true false]", ex, err)
	}
	if err := rdb.EvalSha(ctx, strings.Repeat("0", 40), []string{prefix + "x"}).Err(); err == nil || !strings.HasPrefix(err.Error(), "NOSCRIPT ") {
		t.Fatalf("EVALSHA of an unknown SHA: %v, want a NOSCRIPT error", err)
	}

	// step runs the script once and checks its reply {allowed, tokens left}.
	step := func(key, rate, burst, now, cost string, allowed, left int64) {
		t.Helper()
		got, err := rdb.EvalSha(ctx, sha, []string{key}, rate, burst, now, cost).Int64Slice()
		if err != nil {
			t.Fatalf("EVALSHA rate %s burst %s now %s cost %s: %v", rate, burst, now, cost, err)
		}
		if want := []int64{allowed, left}; !reflect.DeepEqual(got, want) {
			t.Fatalf("EVALSHA rate %s burst %s now %s cost %s: %v, want %v", rate, burst, now, cost, got, want)
		}
	}
	// field checks one stored field of the bucket hash, as text.
	field := func(key, name, want string) {
		t.Helper()
		if got, err := rdb.HGet(ctx, key, name).Result(); err != nil || got != want {
			t.Fatalf("HGET %s %s: %q, %v; want %q", key, name, got, err, want)
		}
	}
	// pttl checks the bucket's time to live is set and at most max ms.
	pttl := func(key string, max time.Duration) {
		t.Helper()
		if got, err := rdb.PTTL(ctx, key).Result(); err != nil || got <= max-2*time.Second || got > max {
			t.Fatalf("PTTL %s: %v, %v; want in (%v, %v]", key, got, err, max-2*time.Second, max)
		}
	}

	// 1 token/s, burst 3: three allowed at once, the fourth denied; half a
	// second later half a token, still denied; a second later one token.
	b := prefix + "bucket"
	step(b, "1", "3", "1000", "1", 1, 2)
	step(b, "1", "3", "1000", "1", 1, 1)
	step(b, "1", "3", "1000", "1", 1, 0)
	step(b, "1", "3", "1000", "1", 0, 0)
	step(b, "1", "3", "1500", "1", 0, 0)
	field(b, "tokens", "0.5")
	field(b, "ts", "1500")
	step(b, "1", "3", "2000", "1", 1, 0)
	field(b, "tokens", "0")
	pttl(b, 4000*time.Millisecond) // ceil(3/1*1000) + 1000
	// Long idle: the bucket refills to the burst, not beyond.
	step(b, "1", "3", "100000", "2", 1, 1)
	field(b, "tokens", "1")

	// Fractional rates: the numbers the script stores go through Redis's
	// number-to-argument conversion (17 significant digits).
	f := prefix + "fraction"
	step(f, "0.1", "3", "0", "3", 1, 0)
	step(f, "0.1", "3", "1000", "1", 0, 0)
	field(f, "tokens", "0.10000000000000001")
	step(f, "0.1", "3", "3000", "1", 0, 0)
	field(f, "tokens", "0.30000000000000004")
	pttl(f, 31000*time.Millisecond) // ceil(3/0.1*1000) + 1000

	// A cost above the burst is always denied and leaves the bucket full.
	c := prefix + "cost"
	step(c, "5", "2", "0", "3", 0, 2)
	field(c, "tokens", "2")
}
