package server

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"runtime"
	"runtime/metrics"
	"strings"
	"testing"
	"time"
)

// waitBufferBytes waits up to 5 s for cond on clientBufferBytes and returns
// the last value.
func waitBufferBytes(t *testing.T, s *Server, what string, cond func(int64) bool) int64 {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		n := s.clientBufferBytes()
		if cond(n) {
			return n
		}
		if time.Now().After(deadline) {
			t.Fatalf("client buffer bytes %d: %s", n, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestPipelineWithoutReadingIsBounded: a client that pipelines requests
// and never reads the replies meets backpressure: once its socket takes
// no more replies the connection reads no further request, so the
// server's buffers for it stay small (and the client's writes stall once
// the kernel's socket buffers are full), however long it goes on. This
// held before client-output-buffer-limit existed; the test keeps it.
func TestPipelineWithoutReadingIsBounded(t *testing.T) {
	eachConnLoop(t, func(t *testing.T, loop func(*Config)) {
		s, addr, _ := newTestServer(t, loop)
		ctl := dialRaw(t, addr)
		ctl.do("SET", "big", strings.Repeat("v", 64<<10))
		base := s.clientBufferBytes()

		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		chunk := []byte(strings.Repeat(encodeCommand("GET", "big"), 4096)) // 64 KiB of requests
		const attempt = 256 << 20
		written := 0
		stop := time.Now().Add(1500 * time.Millisecond)
		for written < attempt && time.Now().Before(stop) {
			c.SetWriteDeadline(stop)
			n, err := c.Write(chunk)
			written += n
			if err != nil {
				break
			}
		}
		// Replies of 64 KiB for every 17 bytes of request: unbounded
		// buffering would hold thousands of times what was written.
		if written >= 128<<20 {
			t.Fatalf("the client wrote %d MiB of requests without reading a reply: no backpressure", written>>20)
		}
		held := s.clientBufferBytes() - base
		list := ctl.do("CLIENT", "LIST")
		t.Logf("wrote %d KiB of requests; server buffers %d KiB more; %s", written>>10, held>>10, list)
		if held > 2<<20 {
			t.Fatalf("server buffers grew by %d KiB for a client that does not read", held>>10)
		}
		for _, l := range strings.Split(list, "\n") {
			if strings.Contains(l, "cmd=get") {
				var rbs int64
				if _, err := fmt.Sscan(l[strings.Index(l, " rbs=")+5:], &rbs); err != nil || rbs > 64<<10 {
					t.Fatalf("input buffer %d bytes (%v): %s", rbs, err, l)
				}
			}
		}
	})
}

// TestClientOutputBufferLimitNormal: client-output-buffer-limit in Redis's
// format (CONFIG GET/SET, classes changed one at a time), and the normal
// class enforced: a reply at or over the hard limit closes the client
// without the reply, and output that stays at or over the soft limit for
// longer than its seconds closes it; both are counted in INFO stats.
// (Before, the parameter did not exist.)
func TestClientOutputBufferLimitNormal(t *testing.T) {
	eachConnLoop(t, func(t *testing.T, loop func(*Config)) {
		s, addr, _ := newTestServer(t, loop)
		ctl := dialRaw(t, addr)
		def := "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60"
		if got := ctl.do("CONFIG", "GET", "client-output-buffer-limit"); got != fmt.Sprintf("*2\r\n$26\r\nclient-output-buffer-limit\r\n$%d\r\n%s\r\n", len(def), def) {
			t.Fatalf("CONFIG GET client-output-buffer-limit = %q", got)
		}
		if got := ctl.do("CONFIG", "SET", "client-output-buffer-limit", "normal 1 2"); got != "-ERR CONFIG SET failed (possibly related to argument 'client-output-buffer-limit') - Wrong number of arguments in buffer limit configuration.\r\n" {
			t.Fatalf("bad CONFIG SET = %q", got)
		}
		if got := ctl.do("CONFIG", "SET", "client-output-buffer-limit", "normal 1mb 256kb 1"); got != "+OK\r\n" {
			t.Fatalf("CONFIG SET = %q", got)
		}
		want := "normal 1048576 262144 1 slave 268435456 67108864 60 pubsub 33554432 8388608 60"
		if got := ctl.do("CONFIG", "GET", "client-output-buffer-limit"); !strings.Contains(got, want) {
			t.Fatalf("CONFIG GET after SET = %q, want %q", got, want)
		}
		ctl.do("SET", "huge", strings.Repeat("h", 2<<20))
		ctl.do("SET", "mid", strings.Repeat("m", 300<<10))
		ctl.do("SET", "small", "s")

		// Hard: a 2 MiB reply over the 1 MiB limit is not sent; the
		// client is closed.
		hard := dialRaw(t, addr)
		hard.send(encodeCommand("GET", "huge"))
		hard.c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if b, err := hard.br.ReadByte(); err == nil {
			t.Fatalf("hard limit: got reply byte %q, want the connection closed", b)
		}
		// Under the limits: replies go out.
		ok := dialRaw(t, addr)
		if got := ok.do("GET", "small"); got != "$1\r\ns\r\n" {
			t.Fatalf("GET small = %q", got)
		}
		if got := ok.do("GET", "mid"); len(got) < 300<<10 {
			t.Fatalf("GET mid: %d bytes", len(got))
		}

		// Soft: 300 KiB replies pipelined to a client that does not read:
		// its pending output stays over 256 KiB; closed after ~1 s.
		soft, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer soft.Close()
		if tc, ok := soft.(*net.TCPConn); ok {
			tc.SetReadBuffer(4096)
		}
		waitUntil(t, func() bool { return s.Clients() == 3 }) // ctl, ok and soft
		soft.SetWriteDeadline(time.Now().Add(5 * time.Second))
		soft.Write([]byte(strings.Repeat(encodeCommand("GET", "mid"), 200)))
		start := time.Now()
		waitUntil(t, func() bool { return s.Clients() == 2 })
		if d := time.Since(start); d < 900*time.Millisecond || d > 4*time.Second {
			t.Fatalf("soft limit of 1 s: closed after %v", d)
		}
		info := ctl.do("INFO", "stats")
		if got := infoField(info, "client_output_buffer_limit_disconnections"); got != "2" {
			t.Fatalf("client_output_buffer_limit_disconnections = %q, want 2", got)
		}
		// Setting one class leaves the others.
		ctl.do("CONFIG", "SET", "client-output-buffer-limit", "pubsub 1k 0 0")
		want = "normal 1048576 262144 1 slave 268435456 67108864 60 pubsub 1000 0 0"
		if got := ctl.do("CONFIG", "GET", "client-output-buffer-limit"); !strings.Contains(got, want) {
			t.Fatalf("CONFIG GET after SET pubsub = %q, want %q", got, want)
		}
	})
}

// TestClientBufferBytes: clientBufferBytes (INFO memory mem_clients_normal)
// counts a large request's input buffer while it arrives and a large reply
// while it waits to be written, and drops back once they are done or the
// connection closes; a large input buffer is given back after its request
// even if the connection stays idle. (Before, a connection kept the buffer
// of its largest request until it next read, and no total existed.)
func TestClientBufferBytes(t *testing.T) {
	eachConnLoop(t, func(t *testing.T, loop func(*Config)) {
		s, addr, _ := newTestServer(t, loop)
		ctl := dialRaw(t, addr)
		if got := infoField(ctl.do("INFO", "memory"), "mem_clients_normal"); got == "" {
			t.Fatal("INFO memory has no mem_clients_normal")
		}
		base := s.clientBufferBytes()
		if base < 16<<10 || base > 1<<20 {
			t.Fatalf("one idle client holds %d bytes of buffers", base)
		}

		// A request of 8 MiB, sent but for its last bytes.
		big := dialRaw(t, addr)
		val := strings.Repeat("x", 8<<20)
		req := encodeCommand("SET", "k", val)
		big.send(req[:len(req)-10])
		waitBufferBytes(t, s, "the half-sent request's input buffer is not counted",
			func(n int64) bool { return n >= base+8<<20 })
		big.send(req[len(req)-10:])
		if got := big.readReply(); got != "+OK\r\n" {
			t.Fatalf("SET = %q", got)
		}
		// Done: the idle connection gives its large buffer back.
		waitBufferBytes(t, s, "the large input buffer is kept after its request",
			func(n int64) bool { return n < base+1<<20 })

		// A large reply to a client that does not read counts while it
		// waits to be written.
		slow, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		slow.Write([]byte(encodeCommand("GET", "k")))
		waitBufferBytes(t, s, "the pending 8 MiB reply is not counted",
			func(n int64) bool { return n >= base+8<<20 })
		r := bufio.NewReader(slow)
		slow.SetReadDeadline(time.Now().Add(10 * time.Second))
		if got, err := readRawReply(r); err != nil || len(got) < 8<<20 {
			t.Fatalf("GET k: %d bytes, %v", len(got), err)
		}
		slow.Close()
		big.c.Close()
		waitBufferBytes(t, s, "buffers of closed connections still counted",
			func(n int64) bool { return n < base+64<<10 })
	})
}

// residentMiB is the process's RSS, in MiB; under the race detector,
// whose shadow memory stays resident whatever the heap does, the Go
// runtime's memory not returned to the OS instead.
func residentMiB() int64 {
	if !raceEnabled {
		return int64(residentBytes() >> 20)
	}
	m := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(m)
	return int64((m[0].Value.Uint64() - m[1].Value.Uint64()) >> 20)
}

// TestLargeQueryBuffersReturnedToOS: the memory of hostile half-sent
// requests goes back to the OS soon after their connections close. Two
// connections send 64 MiB of a request each and close; RSS falls back
// near where it was within a few seconds. (Before, the freed buffers
// stayed resident until the Go heap happened to be collected and
// scavenged, minutes on an idle server: six such connections of 400 MB
// left 3.26 GB resident for over 4 minutes.)
func TestLargeQueryBuffersReturnedToOS(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads RSS from /proc")
	}
	s, addr, _ := newTestServer(t)
	size := 64 << 20
	if raceEnabled {
		size = 32 << 20 // the race detector makes the reading slow
	}
	payload := bytes.Repeat([]byte("z"), size)
	header := []byte(fmt.Sprintf("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$%d\r\n", size+1<<20)) // never completed
	runtime.GC()
	before := residentMiB()
	base := s.clientBufferBytes()

	var conns []net.Conn
	for range 2 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		c.SetWriteDeadline(time.Now().Add(10 * time.Second))
		if _, err := c.Write(header); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Write(payload); err != nil {
			t.Fatal(err)
		}
	}
	waitBufferBytes(t, s, "the two half-sent requests are not in the server's buffers",
		func(n int64) bool { return n >= base+2*int64(size) })
	peak := residentMiB()
	for _, c := range conns {
		c.Close()
	}
	waitBufferBytes(t, s, "buffers of closed connections still counted",
		func(n int64) bool { return n <= base+1<<20 })
	closed := time.Now()
	var now int64
	for {
		now = residentMiB()
		if now < before+64 {
			break
		}
		if time.Since(closed) > 5*time.Second {
			t.Fatalf("RSS %d MiB before, %d MiB with the requests, still %d MiB 5 s after they closed", before, peak, now)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("RSS %d MiB before, %d MiB with the requests, %d MiB %v after they closed",
		before, peak, now, time.Since(closed).Round(time.Millisecond))
	runtime.KeepAlive(payload)
}

// TestClientOutputBufferLimitPubsubSoft: a subscriber whose undelivered
// messages stay over the pubsub class's soft limit for longer than its
// seconds is disconnected (the hard limit has its own test,
// TestPubsubSlowSubscriberDisconnected), and until then the queued bytes
// count in clientBufferBytes.
func TestClientOutputBufferLimitPubsubSoft(t *testing.T) {
	eachConnLoop(t, func(t *testing.T, loop func(*Config)) {
		s, addr, _ := newTestServer(t, loop)
		pub := dialRaw(t, addr)
		if got := pub.do("CONFIG", "SET", "client-output-buffer-limit", "pubsub 0 256kb 1"); got != "+OK\r\n" {
			t.Fatalf("CONFIG SET = %q", got)
		}
		slowSubscriber(t, addr, pub)
		base := s.clientBufferBytes()
		msg := strings.Repeat("p", 32<<10)
		var peak int64
		start := time.Now()
		for pub.do("PUBLISH", "flood", msg) == ":1\r\n" {
			peak = max(peak, s.clientBufferBytes()-base)
			if time.Since(start) > 5*time.Second {
				t.Fatalf("slow subscriber not disconnected after 5 s; its queue peaked at %d KiB", peak>>10)
			}
			time.Sleep(10 * time.Millisecond)
		}
		if d := time.Since(start); d < 900*time.Millisecond {
			t.Fatalf("disconnected after %v, before the soft limit's second", d)
		}
		if peak < 256<<10 {
			t.Fatalf("queued output peaked at %d KiB in clientBufferBytes, want at least the 256 KiB soft limit", peak>>10)
		}
		if got := infoField(pub.do("INFO", "stats"), "client_output_buffer_limit_disconnections"); got != "1" {
			t.Fatalf("client_output_buffer_limit_disconnections = %q", got)
		}
		waitClients(t, s, 1)
	})
}
