package server

import (
	"bufio"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// waitAOF waits until the log is on (or off) as asked, with no switch or
// rewrite running.
func waitAOF(t *testing.T, s *Server, on bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for (s.aofLog() != nil) != on || s.persist.rewriteRunning.Load() || !s.persist.aofMu.TryLock() {
		if time.Now().After(deadline) {
			t.Fatalf("append-only log not switched %v", on)
		}
		time.Sleep(5 * time.Millisecond)
	}
	s.persist.aofMu.Unlock()
}

// TestConfigSetAppendOnlyLive: CONFIG SET appendonly yes starts the log
// from the dataset while clients write (a push that is not idempotent is
// in exactly one of the base and the log: a restart from the log alone
// has every acknowledged push once); appendonly no closes it, and later
// writes are not logged.
func TestConfigSetAppendOnlyLive(t *testing.T) {
	aof := false
	r := newRestartable(t, func(c *Config) {
		c.Persist.Save = nil // a restart loads the log (or nothing), never a snapshot
		c.Persist.AppendOnly = aof
	})
	r.expect("+OK\r\n", "SET", "before", "1")

	// Writers push while the log starts.
	const writers = 2
	acked := make([]int, writers)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	addr := r.srv.Addr().String()
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.DialTimeout("tcp", addr, 2*time.Second)
			if err != nil {
				t.Error(err)
				return
			}
			defer c.Close()
			rc := &rawConn{t: t, c: c, br: newReader(c)}
			for i := 0; i < 100000; i++ {
				select {
				case <-stop:
					return
				default:
				}
				if got := rc.do("RPUSH", "w"+strconv.Itoa(w), "x"); !strings.HasPrefix(got, ":") {
					t.Errorf("RPUSH: %q", got)
					return
				}
				acked[w]++
			}
		}()
	}
	time.Sleep(20 * time.Millisecond)
	r.expect("+OK\r\n", "CONFIG", "SET", "appendonly", "yes")
	r.expect("*2\r\n$10\r\nappendonly\r\n$3\r\nyes\r\n", "CONFIG", "GET", "appendonly")
	waitAOF(t, r.srv, true)
	time.Sleep(30 * time.Millisecond)
	close(stop)
	wg.Wait()
	if info := r.rc.do("INFO", "persistence"); !strings.Contains(info, "aof_enabled:1\r\n") || !strings.Contains(info, "aof_last_bgrewrite_status:ok\r\n") {
		t.Errorf("INFO persistence after appendonly yes: %q", info)
	}
	aof = true
	r.restart() // from the log alone
	r.expect("$1\r\n1\r\n", "GET", "before")
	for w := range writers {
		r.expect(":"+strconv.Itoa(acked[w])+"\r\n", "LLEN", "w"+strconv.Itoa(w))
	}
	if acked[0] == 0 || acked[1] == 0 {
		t.Errorf("writers acknowledged %v pushes", acked)
	}

	// appendonly no: the log is closed, later writes are not in it.
	r.expect("+OK\r\n", "CONFIG", "SET", "appendonly", "no")
	waitAOF(t, r.srv, false)
	r.expect("+OK\r\n", "SET", "after", "1")
	if info := r.rc.do("INFO", "persistence"); !strings.Contains(info, "aof_enabled:0\r\n") {
		t.Errorf("INFO persistence after appendonly no: %q", info)
	}
	// Switched back and forth, it ends as last asked, and a write after
	// it is durable in the new log.
	r.expect("+OK\r\n", "CONFIG", "SET", "appendonly", "yes")
	r.expect("+OK\r\n", "CONFIG", "SET", "appendonly", "no")
	r.expect("+OK\r\n", "CONFIG", "SET", "appendonly", "yes")
	waitAOF(t, r.srv, true)
	r.expect("+OK\r\n", "SET", "again", "2")
	r.restart()
	r.expect("$1\r\n1\r\n", "GET", "after") // in the dataset the second log started from
	r.expect("$1\r\n2\r\n", "GET", "again")
	r.expect("$1\r\n1\r\n", "GET", "before")
}

func newReader(c net.Conn) *bufio.Reader { return bufio.NewReader(c) }

// TestConfigSetAppendOnlyRefused: a server whose writes go to a
// Durability of its embedder's (a cluster's Raft log) keeps it.
func TestConfigSetAppendOnlyRefused(t *testing.T) {
	tap := &effectTap{}
	s, addr, _ := newTestServer(t, func(c *Config) { c.Durability = tap })
	rc := dialRaw(t, addr)
	want := "-ERR CONFIG SET failed (possibly related to argument 'appendonly') - " + string(errAppendOnlyFixed) + "\r\n"
	if got := rc.do("CONFIG", "SET", "appendonly", "yes"); got != want {
		t.Errorf("CONFIG SET appendonly yes: %q", got)
	}
	if s.aofLog() != nil || s.durability() != Durability(tap) {
		t.Error("the durability changed")
	}
}
