package server

import (
	"strings"
	"testing"

	"github.com/turnstile/turnstile/persistence"
)

// BenchmarkAppendBigValue is the case of 10 KB APPENDs to a value
// of megabytes, with appendonly on (appendfsync no: the benchmark is about
// copying, not the disk): the value starts at 1 MB and is reset every 300
// appends (4 MB then), outside the timing. Before range effects each
// APPEND logged the whole value, and every APPEND still copies the value
// in memory unless it can grow in place.
func BenchmarkAppendBigValue(b *testing.B) {
	s, c := newPathClient(b, func(cfg *Config) {
		cfg.Persist.AppendOnly = true
		cfg.Persist.AppendFsync = persistence.FsyncNo
		cfg.Persist.Dir = b.TempDir()
	})
	reset := []byte(encodeCommand("SET", "big", strings.Repeat("v", 1<<20)))
	add := []byte(encodeCommand("APPEND", "big", strings.Repeat("a", 10<<10)))
	feedBig(b, s, c, reset)
	b.SetBytes(10 << 10)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i%300 == 299 {
			b.StopTimer()
			feedBig(b, s, c, reset)
			b.StartTimer()
		}
		feedBig(b, s, c, add)
	}
}

// feedBig is feed for a request bigger than the reader's free space: it
// is copied in as the reader makes room.
func feedBig(tb testing.TB, s *Server, c *client, req []byte) {
	for {
		buf, err := c.rd.Space()
		if err != nil {
			tb.Fatal(err)
		}
		n := copy(buf, req)
		c.rd.Advance(n)
		req = req[n:]
		args, ok, err := c.rd.Next(false)
		if err != nil {
			tb.Fatal(err)
		}
		if ok {
			if len(req) != 0 {
				tb.Fatal("a request parsed before all of it was fed")
			}
			s.handle(c, args)
			if !c.syncLog() {
				tb.Fatal("log sync failed")
			}
			c.w.Reset(1 << 20)
			return
		}
		if len(req) == 0 {
			tb.Fatal("the request did not parse")
		}
	}
}
