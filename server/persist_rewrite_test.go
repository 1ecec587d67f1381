package server

import (
	"bufio"
	"fmt"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/turnstile/turnstile/persistence"
)

// TestRewriteDuringCollectionWrites: log rewrites while clients write ops
// that are not idempotent (RPUSH, HINCRBY, ZINCRBY) put each effect in
// exactly one of the new base and the new incremental file, so a restart
// loads exactly the acknowledged writes: none is lost and none applied
// twice. (Before the rewrite switched files at the dump's instant, the
// writes between the switch and the dump's freeze landed in both, and a
// restart showed one push too many.) Each round runs writers, rewrites the
// log several times under them, stops them, and restarts the server.
func TestRewriteDuringCollectionWrites(t *testing.T) {
	r := newRestartable(t, func(c *Config) {
		c.Persist.AppendOnly = true
		c.Persist.AppendFsync = persistence.FsyncAlways
		c.Persist.AutoRewritePercentage = 0
	})
	const (
		writers  = 3
		pipeline = 8                      // commands of each kind per round trip
		rounds   = 4                      // restarts
		rewrites = 25                     // most rewrites per round
		perRound = 400 * time.Millisecond // most time rewriting per round
	)
	acked := make([]int, writers) // acknowledged RPUSH (= HINCRBY = ZINCRBY) per writer, over all rounds
	for round := range rounds {
		addr := r.srv.Addr().String()
		stop := make(chan struct{})
		started := make(chan struct{}, writers)
		errs := make(chan error, writers)
		var wg sync.WaitGroup
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				n, err := collectionWriter(addr, w, pipeline, stop, started)
				acked[w] += n
				errs <- err
			}()
		}
		for range writers {
			select {
			case <-started:
			case <-time.After(5 * time.Second):
				t.Fatal("writers did not start")
			}
		}
		deadline := time.Now().Add(perRound)
		n := 0
		for ; n < rewrites && time.Now().Before(deadline); n++ {
			if err := r.srv.rewriteLog(); err != nil {
				t.Fatalf("round %d: rewrite %d: %v", round, n, err)
			}
		}
		close(stop)
		wg.Wait()
		for range writers {
			if err := <-errs; err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
		}
		checkCollectionCounts(t, r.rc, acked, fmt.Sprintf("round %d, before restart", round))
		r.restart()
		checkCollectionCounts(t, r.rc, acked, fmt.Sprintf("round %d, after restart (%d rewrites)", round, n))
	}
}

// collectionWriter writes, until stop is closed, batches of pipeline
// RPUSH l:<w>, HINCRBY h f<w> 1 and ZINCRBY z 1 m<w> on its own connection,
// and returns how many of each were acknowledged. It signals started after
// its first batch.
func collectionWriter(addr string, w, pipeline int, stop <-chan struct{}, started chan<- struct{}) (int, error) {
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	br := bufio.NewReader(c)
	ws := strconv.Itoa(w)
	var batch []byte
	for range pipeline {
		batch = append(batch, encodeCommand("RPUSH", "l:"+ws, "x")...)
		batch = append(batch, encodeCommand("HINCRBY", "h", "f"+ws, "1")...)
		batch = append(batch, encodeCommand("ZINCRBY", "z", "1", "m"+ws)...)
	}
	n := 0
	for i := 0; i < 1_000_000; i++ {
		if i == 1 {
			started <- struct{}{}
		}
		select {
		case <-stop:
			return n, nil
		default:
		}
		c.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Write(batch); err != nil {
			return n, fmt.Errorf("writer %d: %w", w, err)
		}
		for range 3 * pipeline {
			rep, err := readRawReply(br)
			if err != nil {
				return n, fmt.Errorf("writer %d: %w", w, err)
			}
			if rep[0] == '-' {
				return n, fmt.Errorf("writer %d: %q", w, rep)
			}
		}
		n += pipeline
	}
	return n, fmt.Errorf("writer %d: never stopped", w)
}

// checkCollectionCounts checks that each writer's list length, hash field
// and sorted-set score equal its acknowledged writes.
func checkCollectionCounts(t *testing.T, rc *rawConn, acked []int, when string) {
	t.Helper()
	for w, n := range acked {
		ws := strconv.Itoa(w)
		want := ":" + strconv.Itoa(n) + "\r\n"
		if got := rc.do("LLEN", "l:"+ws); got != want {
			t.Fatalf("%s: LLEN l:%d = %q, want %q", when, w, got, want)
		}
		if got, want := rc.do("HGET", "h", "f"+ws), bulkReply(strconv.Itoa(n)); got != want {
			t.Fatalf("%s: HGET h f%d = %q, want %q", when, w, got, want)
		}
		if got, want := rc.do("ZSCORE", "z", "m"+ws), bulkReply(strconv.Itoa(n)); got != want {
			t.Fatalf("%s: ZSCORE z m%d = %q, want %q", when, w, got, want)
		}
	}
}

func bulkReply(s string) string { return "$" + strconv.Itoa(len(s)) + "\r\n" + s + "\r\n" }
