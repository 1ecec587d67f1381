package server

import (
	"os"
	"strconv"
	"testing"

	"github.com/turnstile/turnstile/script"
)

// BenchmarkEvalSHAPath measures EVALSHA of the seed token-bucket script
// (libtest/testdata, seed 000 §6) through the whole in-process command
// path: the Lua run with its HMGET, HSET and PEXPIRE, on 1024 keys.
func BenchmarkEvalSHAPath(b *testing.B) {
	body, err := os.ReadFile("../libtest/testdata/seed000-token-bucket.lua")
	if err != nil {
		b.Fatal(err)
	}
	s, c := newPathClient(b)
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
