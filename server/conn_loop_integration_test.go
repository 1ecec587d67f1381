package server

import (
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestIntegrationConnLoops runs go-redis traffic that stresses the write
// path against both connection loops (conn_io_test.go's eachConnLoop) and
// both protocols: deep pipelines, replies far larger than maxPendingReply
// (so they are flushed in the middle of a batch, and the socket's buffer
// fills), a client that closes in the middle of a pipeline, and QUIT.
func TestIntegrationConnLoops(t *testing.T) {
	eachConnLoop(t, func(t *testing.T, loop func(*Config)) {
		itEachProtocol(t, func(t *testing.T, e *itEnv) {
			t.Run("pipeline", func(t *testing.T) { itLoopPipeline(t, e) })
			t.Run("large-values", func(t *testing.T) { itLoopLargeValues(t, e) })
			t.Run("close-mid-pipeline", func(t *testing.T) { itLoopCloseMidPipeline(t, e) })
			t.Run("quit", func(t *testing.T) { itLoopQuit(t, e) })
		}, loop)
	})
}

// itLoopPipeline sends one go-redis pipeline of 3000 commands, mixed
// writes, reads and throttles, and checks every reply in order.
func itLoopPipeline(t *testing.T, e *itEnv) {
	const n = 1000
	cmds, err := e.rdb.Pipelined(e.ctx, func(p redis.Pipeliner) error {
		for i := range n {
			k := fmt.Sprintf("pipe:%d", i)
			p.Set(e.ctx, k, strings.Repeat("v", i%300), 0)
			p.Get(e.ctx, k)
			p.Do(e.ctx, "CL.THROTTLE", "pipe:limit", 5000, 1, 60)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(cmds) != 3*n {
		t.Fatalf("%d replies, want %d", len(cmds), 3*n)
	}
	for i := range n {
		if got, err := cmds[3*i].(*redis.StatusCmd).Result(); err != nil || got != "OK" {
			t.Fatalf("SET %d: %q %v", i, got, err)
		}
		if got, err := cmds[3*i+1].(*redis.StringCmd).Result(); err != nil || got != strings.Repeat("v", i%300) {
			t.Fatalf("GET %d: %d bytes, %v", i, len(got), err)
		}
		got, err := cmds[3*i+2].(*redis.Cmd).Int64Slice()
		itWantSlice(t, fmt.Sprintf("CL.THROTTLE %d", i), got, err, 0, 5001, 5000-int64(i), -1, int64(i+1)*60)
	}
}

// itLoopLargeValues stores values of 64 KiB and more and reads them back
// in pipelines, one GET after another and all at once with MGET, so that
// single replies and batches exceed maxPendingReply many times over.
func itLoopLargeValues(t *testing.T, e *itEnv) {
	sizes := []int{maxPendingReply - 1, maxPendingReply, maxPendingReply + 1, 200 << 10, 1 << 20, 3 << 20}
	val := func(i int) string {
		return strings.Repeat(string(rune('a'+i)), sizes[i]-8) + fmt.Sprintf("%08d", sizes[i])
	}
	keys := make([]string, len(sizes))
	if _, err := e.rdb.Pipelined(e.ctx, func(p redis.Pipeliner) error {
		for i := range sizes {
			keys[i] = fmt.Sprintf("large:%d", i)
			p.Set(e.ctx, keys[i], val(i), 0)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	const rounds = 4
	cmds, err := e.rdb.Pipelined(e.ctx, func(p redis.Pipeliner) error {
		for range rounds {
			for _, k := range keys {
				p.Get(e.ctx, k)
			}
			p.MGet(e.ctx, keys...)
			p.Ping(e.ctx)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for r := range rounds {
		off := r * (len(keys) + 2)
		for i := range keys {
			if got, err := cmds[off+i].(*redis.StringCmd).Result(); err != nil || got != val(i) {
				t.Fatalf("round %d GET %s: %d bytes (want %d), %v", r, keys[i], len(got), sizes[i], err)
			}
		}
		all, err := cmds[off+len(keys)].(*redis.SliceCmd).Result()
		if err != nil || len(all) != len(keys) {
			t.Fatalf("round %d MGET: %d values, %v", r, len(all), err)
		}
		for i, v := range all {
			if s, _ := v.(string); s != val(i) {
				t.Fatalf("round %d MGET value %d: %d bytes, want %d", r, i, len(s), sizes[i])
			}
		}
		if got, err := cmds[off+len(keys)+1].(*redis.StatusCmd).Result(); err != nil || got != "PONG" {
			t.Fatalf("round %d PING: %q %v", r, got, err)
		}
	}
}

// itLoopCloseMidPipeline: clients that close while the server still has
// requests to run and replies to write, whether it is blocked writing (the
// client reads nothing) or reading the rest of a request, are removed,
// and the server keeps serving.
func itLoopCloseMidPipeline(t *testing.T, e *itEnv) {
	big := strings.Repeat("x", 512<<10)
	if err := e.rdb.Set(e.ctx, "cmp:big", big, 0).Err(); err != nil {
		t.Fatal(err)
	}
	before := e.s.Clients()
	for i := range 6 {
		rc := dialRaw(t, e.addr)
		// 32 MB of replies: more than the socket buffers hold.
		var b strings.Builder
		for range 64 {
			b.WriteString(encodeCommand("GET", "cmp:big"))
		}
		if i%2 == 1 {
			b.WriteString("*3\r\n$3\r\nSET\r\n$5\r\ncmp:x\r\n$100\r\npartial") // cut off
		}
		sent := itSendAsync(rc, b.String())
		// Read part of the first reply, so the server is surely writing.
		rc.c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.ReadFull(rc.br, make([]byte, 1000*(i+1))); err != nil {
			t.Fatalf("client %d: %v", i, err)
		}
		rc.c.Close()
		<-sent
	}
	waitClients(t, e.s, before)
	if got, err := e.rdb.Get(e.ctx, "cmp:big").Result(); err != nil || got != big {
		t.Fatalf("GET after the closes: %d bytes, %v", len(got), err)
	}
	if n, err := e.rdb.Exists(e.ctx, "cmp:x").Result(); err != nil || n != 0 {
		t.Fatalf("the cut-off SET ran: EXISTS = %d, %v", n, err)
	}
}

// itLoopQuit: QUIT in a go-redis pipeline answers OK, the commands after
// it do not run and the connection ends; QUIT after a large reply still
// delivers that reply first.
func itLoopQuit(t *testing.T, e *itEnv) {
	// No retries: go-redis would send the pipeline again after the close.
	rdb := itGoRedis(t, e.addr, e.proto, func(o *redis.Options) { o.MaxRetries = -1 })
	cmds, err := rdb.Pipelined(e.ctx, func(p redis.Pipeliner) error {
		p.Ping(e.ctx)
		p.Do(e.ctx, "QUIT")
		p.Incr(e.ctx, "quit:after")
		return nil
	})
	// go-redis marks every command of a pipeline that failed with the
	// error (here the end of the stream after QUIT); the values read
	// before it are kept.
	if err == nil {
		t.Fatal("a pipeline with QUIT in the middle succeeded")
	}
	if got := cmds[0].(*redis.StatusCmd).Val(); got != "PONG" {
		t.Fatalf("PING before QUIT: %q (%v)", got, err)
	}
	if got := cmds[1].(*redis.Cmd).Val(); got != "OK" {
		t.Fatalf("QUIT: %v (%v)", got, err)
	}
	if n, err := e.rdb.Exists(e.ctx, "quit:after").Result(); err != nil || n != 0 {
		t.Fatalf("INCR after QUIT ran: EXISTS = %d, %v", n, err)
	}

	big := strings.Repeat("q", 300<<10)
	if err := e.rdb.Set(e.ctx, "quit:big", big, 0).Err(); err != nil {
		t.Fatal(err)
	}
	rc := dialRaw(t, e.addr)
	rc.send(encodeCommand("GET", "quit:big") + encodeCommand("QUIT") + encodeCommand("INCR", "quit:after"))
	if got := rc.readReply(); got != fmt.Sprintf("$%d\r\n%s\r\n", len(big), big) {
		t.Fatalf("GET before QUIT: %d bytes", len(got))
	}
	if got := rc.readReply(); got != "+OK\r\n" {
		t.Fatalf("QUIT: %q", got)
	}
	rc.expectClosed()
	if n, err := e.rdb.Exists(e.ctx, "quit:after").Result(); err != nil || n != 0 {
		t.Fatalf("INCR after QUIT ran: EXISTS = %d, %v", n, err)
	}
}
