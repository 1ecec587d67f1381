package server

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/turnstile/turnstile/script"
)

// BenchmarkEvalSHAPath measures EVALSHA of the seed token-bucket script
// (libtest/testdata, seed 000 §6) through the whole in-process command
// path, with its HMGET, HSET and PEXPIRE, on 1024 keys: run in Lua, and
// run natively. BenchmarkMultiPath sends the same three commands in
// MULTI/EXEC, the cost a script is compared with.
func BenchmarkEvalSHAPath(b *testing.B) {
	b.Run("lua", func(b *testing.B) { benchEvalSHA(b, false) })
	b.Run("native", func(b *testing.B) { benchEvalSHA(b, true) })
}

func benchEvalSHA(b *testing.B, native bool) {
	body, err := os.ReadFile("../libtest/testdata/seed000-token-bucket.lua")
	if err != nil {
		b.Fatal(err)
	}
	s, c := newPathClient(b, func(cfg *Config) { cfg.NativeScripts = native })
	feed(b, s, c, []byte(encodeCommand("SCRIPT", "LOAD", string(body))))
	sha := scriptSHA(body)
	const nkeys = 1024
	reqs := make([][]byte, nkeys)
	for i := range reqs {
		reqs[i] = []byte(encodeCommand("EVALSHA", sha, "1", "tb:"+strconv.Itoa(i), "10", "20", "1000", "1"))
	}
	for _, r := range reqs {
		feed(b, s, c, r)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		feed(b, s, c, reqs[i%nkeys])
	}
}

func scriptSHA(body []byte) string { return script.SHA1Hex(body) }

func BenchmarkMultiPath(b *testing.B) {
	s, c := newPathClient(b)
	const nkeys = 1024
	type tx [5][]byte
	txs := make([]tx, nkeys)
	for i := range txs {
		k := "tb:" + strconv.Itoa(i)
		txs[i] = tx{
			[]byte(encodeCommand("MULTI")),
			[]byte(encodeCommand("HMGET", k, "tokens", "ts")),
			[]byte(encodeCommand("HSET", k, "tokens", "19", "ts", "1000")),
			[]byte(encodeCommand("PEXPIRE", k, "3000")),
			[]byte(encodeCommand("EXEC")),
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, r := range txs[i%nkeys] {
			feed(b, s, c, r)
		}
	}
}

// BenchmarkRedisRateAllowN measures EVALSHA of redis_rate's allowN (the
// limiter go-redis/redis_rate runs on every request: TIME, GET, SET)
// through the whole in-process command path, on 1024 keys at 100/s with a
// burst of 100, run natively and, for comparison, in Lua
// (turnstile-native-scripts no).
func BenchmarkRedisRateAllowN(b *testing.B) {
	for _, native := range []bool{true, false} {
		b.Run(map[bool]string{true: "native", false: "lua"}[native], func(b *testing.B) {
			benchScript(b, "../libtest/testdata/scripts/redis_rate-allowN.lua", native, "100", "100", "1", "1")
		})
	}
}

// BenchmarkNativeScripts measures every native as
// BenchmarkRedisRateAllowN does, with arguments its library sends.
func BenchmarkNativeScripts(b *testing.B) {
	calls := map[string]struct {
		setup []string // run on each key first, "%s" for the key
		more  []string // KEYS after the key, "%s" for the key
		args  []string
	}{
		"seed.token_bucket":                         {args: []string{"10", "20", "1000", "1"}},
		"redis_rate.allowN":                         {args: []string{"100", "100", "1", "1"}},
		"redis_rate.allowAtMost":                    {args: []string{"100", "100", "1", "5"}},
		"rate-limit-redis.increment":                {args: []string{"60000"}},
		"rate-limit-redis.get":                      {setup: []string{"SET %s 3 PX 60000"}},
		"rate-limiter-flexible.incrTtl":             {args: []string{"1", "60"}},
		"ulule-limiter.incr":                        {args: []string{"1", "60000"}},
		"ulule-limiter.peek":                        {setup: []string{"SET %s 3 PX 60000"}},
		"python-limits.incr_expire":                 {args: []string{"60", "1"}},
		"python-limits.moving_window":               {setup: []string{"LPUSH %s 1700000001 1700000002"}, args: []string{"1700000000", "10"}},
		"python-limits.acquire_moving_window":       {args: []string{"1700000100.5", "10", "60", "1"}},
		"throttled.cas":                             {setup: []string{"SET %s 1700000000000000000"}, args: []string{"1700000000000000000", "1700000000000000000", "60"}},
		"spring-cloud-gateway.request_rate_limiter": {more: []string{"%s.timestamp"}, args: []string{"10", "20", "1700000000", "1"}},
	}
	for _, n := range script.Natives() {
		call, ok := calls[n.Name]
		if !ok {
			b.Fatalf("no benchmark call for native %s", n.Name)
		}
		for _, native := range []bool{true, false} {
			b.Run(n.Name+"/"+map[bool]string{true: "native", false: "lua"}[native], func(b *testing.B) {
				benchScriptSetup(b, "../libtest/testdata/"+nativeCases[n.Name].file, native, call.setup, call.more, call.args...)
			})
		}
	}
}

// benchScript runs EVALSHA of the script in file on 1024 keys with args.
func benchScript(b *testing.B, file string, native bool, args ...string) {
	benchScriptSetup(b, file, native, nil, nil, args...)
}

// benchScriptSetup is benchScript after the setup commands ran on each
// key ("%s" for the key), with the keys more (made from the key alike)
// after it.
func benchScriptSetup(b *testing.B, file string, native bool, setup, more []string, args ...string) {
	body, err := os.ReadFile(file)
	if err != nil {
		b.Fatal(err)
	}
	s, c := newPathClient(b, func(cfg *Config) { cfg.NativeScripts = native })
	feed(b, s, c, []byte(encodeCommand("SCRIPT", "LOAD", string(body))))
	sha := scriptSHA(body)
	const nkeys = 1024
	reqs := make([][]byte, nkeys)
	for i := range reqs {
		key := "rl:" + strconv.Itoa(i)
		for _, cmd := range setup {
			feed(b, s, c, []byte(encodeCommand(splitFormat(cmd, key)...)))
		}
		cmd := []string{"EVALSHA", sha, strconv.Itoa(1 + len(more)), key}
		for _, k := range more {
			cmd = append(cmd, strings.ReplaceAll(k, "%s", key))
		}
		cmd = append(cmd, args...)
		reqs[i] = []byte(encodeCommand(cmd...))
	}
	for _, r := range reqs {
		feed(b, s, c, r)
	}
	runs := s.nativeRunCount()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		feed(b, s, c, reqs[i%nkeys])
	}
	b.StopTimer()
	if ran := s.nativeRunCount() > runs; ran != native {
		b.Fatalf("ran natively: %v, want %v", ran, native)
	}
}
