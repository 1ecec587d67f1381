package server

import (
	"os"
	"strconv"
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
