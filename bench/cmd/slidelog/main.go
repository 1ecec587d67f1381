// Command slidelog drives the sorted-set sliding-log limiter, the most
// common hand-written rate limiter after INCR+EXPIRE, against any server
// that speaks RESP, and prints the transactions per second it got:
//
//	MULTI
//	ZREMRANGEBYSCORE key -inf <score-members>   # drop what left the window
//	ZADD key <score> <member>                   # log this request
//	ZCARD key                                   # requests in the window
//	PEXPIRE key 60000
//	EXEC
//
// Each key holds exactly -members members in steady state: scores are a
// per-key sequence on top of a millisecond timestamp, so the window keeps
// the last -members requests. -prefill first gives every key that many
// members, so the run starts in steady state (and the memory it takes can
// be measured before the run).
//
//	slidelog -addr 127.0.0.1:6379 -prefill -keys 100000 -members 50 -run=false
//	slidelog -addr 127.0.0.1:6379 -c 50 -P 16 -keys 100000 -members 50 -d 10s
package main

import (
	"bufio"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/turnstile/turnstile/bench/internal/wire"
)

type config struct {
	addr    string
	conns   int
	depth   int
	keys    int
	members int
	dur     time.Duration
	prefill bool
	run     bool
}

// base is the first score: a millisecond timestamp, as real sliding logs use.
const base = 1_733_000_000_000

func main() {
	var c config
	flag.StringVar(&c.addr, "addr", "127.0.0.1:6379", "server address")
	flag.IntVar(&c.conns, "c", 50, "connections")
	flag.IntVar(&c.depth, "P", 16, "transactions pipelined per connection")
	flag.IntVar(&c.keys, "keys", 100000, "distinct keys")
	flag.IntVar(&c.members, "members", 50, "members per key (the window)")
	flag.DurationVar(&c.dur, "d", 10*time.Second, "run time")
	flag.BoolVar(&c.prefill, "prefill", false, "first give every key -members members")
	flag.BoolVar(&c.run, "run", true, "run the timed load")
	flag.Parse()
	if c.conns < 1 || c.conns > 10000 || c.depth < 1 || c.depth > 10000 || c.keys < 1 || c.keys > 1e8 ||
		c.members < 1 || c.members > 1e6 || c.dur <= 0 || c.dur > time.Hour || flag.NArg() > 0 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(c); err != nil {
		fmt.Fprintln(os.Stderr, "slidelog:", err)
		os.Exit(1)
	}
}

func run(c config) error {
	seq := make([]atomic.Int64, c.keys) // next score offset of each key
	for i := range seq {
		seq[i].Store(int64(c.members))
	}
	if c.prefill {
		if err := prefill(c); err != nil {
			return fmt.Errorf("prefill: %w", err)
		}
	}
	if !c.run {
		return nil
	}
	var total atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, c.conns)
	deadline := time.Now().Add(c.dur)
	start := time.Now()
	for id := range c.conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n, err := worker(c, id, seq, deadline)
			total.Add(n)
			if err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	fmt.Printf("%.0f\n", float64(total.Load())/elapsed.Seconds())
	return nil
}

func key(i int) string { return "slog:" + strconv.Itoa(i) }

// prefill gives every key members members, pipelined on one connection.
func prefill(c config) error {
	conn, err := net.DialTimeout("tcp", c.addr, 5*time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Minute))
	w := bufio.NewWriterSize(conn, 1<<16)
	r := bufio.NewReaderSize(conn, 1<<16)
	const batch = 256
	for lo := 0; lo < c.keys; lo += batch {
		hi := min(lo+batch, c.keys)
		for k := lo; k < hi; k++ {
			args := []string{"ZADD", key(k)}
			for m := range c.members {
				s := strconv.FormatInt(base+int64(m), 10)
				args = append(args, s, s+"-0")
			}
			wire.WriteCmd(w, args...)
		}
		if err := w.Flush(); err != nil {
			return err
		}
		for k := lo; k < hi; k++ {
			if err := wire.ReadReply(r); err != nil {
				return err
			}
		}
	}
	return nil
}

// worker runs pipelined transactions until the deadline and returns how
// many completed.
func worker(c config, id int, seq []atomic.Int64, deadline time.Time) (int64, error) {
	conn, err := net.DialTimeout("tcp", c.addr, 5*time.Second)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	conn.SetDeadline(deadline.Add(30 * time.Second))
	w := bufio.NewWriterSize(conn, 1<<16)
	r := bufio.NewReaderSize(conn, 1<<16)
	rng := rand.New(rand.NewPCG(uint64(id), 42))
	member := "-" + strconv.Itoa(id)
	var done int64
	for time.Now().Before(deadline) {
		for range c.depth {
			k := rng.IntN(c.keys)
			s := base + seq[k].Add(1) - 1
			score := strconv.FormatInt(s, 10)
			wire.WriteCmd(w, "MULTI")
			wire.WriteCmd(w, "ZREMRANGEBYSCORE", key(k), "-inf", strconv.FormatInt(s-int64(c.members), 10))
			wire.WriteCmd(w, "ZADD", key(k), score, score+member)
			wire.WriteCmd(w, "ZCARD", key(k))
			wire.WriteCmd(w, "PEXPIRE", key(k), "60000")
			wire.WriteCmd(w, "EXEC")
		}
		if err := w.Flush(); err != nil {
			return done, err
		}
		for range c.depth {
			for range 5 { // +OK, then QUEUED four times
				if err := wire.ReadReply(r); err != nil {
					return done, err
				}
			}
			if err := readExec(r, c.members); err != nil {
				return done, err
			}
			done++
		}
	}
	return done, nil
}

// readExec reads EXEC's reply and checks that ZCARD saw a full window (at
// most members, plus what concurrent transactions on the key added).
func readExec(r *bufio.Reader, members int) error {
	line, err := wire.ReadLine(r)
	if err != nil {
		return err
	}
	if line != "*4" {
		return fmt.Errorf("EXEC replied %q", line)
	}
	var card int64
	for i := range 4 {
		l, err := wire.ReadLine(r)
		if err != nil {
			return err
		}
		if l[0] != ':' {
			return fmt.Errorf("EXEC reply %d is %q", i, l)
		}
		if i == 2 {
			card, _ = strconv.ParseInt(l[1:], 10, 64)
		}
	}
	if card < 1 || card > int64(members)+64 {
		return fmt.Errorf("ZCARD %d with a window of %d", card, members)
	}
	return nil
}
