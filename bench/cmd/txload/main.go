// Command txload sends pipelined transactions, each a fixed sequence of
// commands on one key drawn at random, to a RESP server and prints how
// many it completed per second. bench/scripts.sh uses it to compare a Lua
// script with the same commands sent in MULTI/EXEC, which redis-benchmark
// cannot send:
//
//	txload -addr 127.0.0.1:6379 -n 300000 \
//	    -tx 'MULTI|HMGET {k} tokens ts|HSET {k} tokens 19 ts 1000|PEXPIRE {k} 3000|EXEC'
//	txload -addr 127.0.0.1:6379 -n 300000 -tx 'EVALSHA <sha1> 1 {k} 10 20 1000 1'
//
// -tx separates commands with "|" and arguments with spaces; {k} stands
// for the transaction's key, "<prefix><0 to keys-1>". Each of -c
// connections sends -P transactions, then reads their replies, until the
// -n transactions are done or -d has passed. Any error reply stops it.
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/turnstile/turnstile/bench/internal/wire"
)

type config struct {
	addr   string
	conns  int
	depth  int
	keys   int
	total  int64
	dur    time.Duration
	prefix string
	tx     [][]string // commands, each its arguments
}

func main() {
	var c config
	var tx string
	flag.StringVar(&c.addr, "addr", "127.0.0.1:6379", "server address")
	flag.IntVar(&c.conns, "c", 50, "connections")
	flag.IntVar(&c.depth, "P", 16, "transactions pipelined per connection")
	flag.IntVar(&c.keys, "keys", 100000, "distinct keys")
	flag.Int64Var(&c.total, "n", 300000, "transactions to send in all")
	flag.DurationVar(&c.dur, "d", 2*time.Minute, "time limit")
	flag.StringVar(&c.prefix, "prefix", "tx:", "key prefix")
	flag.StringVar(&tx, "tx", "", `the transaction: commands separated by "|", {k} for the key`)
	flag.Parse()
	var err error
	if c.tx, err = parseTx(tx); err != nil || c.conns < 1 || c.conns > 10000 || c.depth < 1 || c.depth > 10000 ||
		c.keys < 1 || c.keys > 1e8 || c.total < 1 || c.dur <= 0 || c.dur > time.Hour || flag.NArg() > 0 {
		if err != nil {
			fmt.Fprintln(os.Stderr, "txload:", err)
		}
		flag.Usage()
		os.Exit(2)
	}
	rate, err := run(c)
	if err != nil {
		fmt.Fprintln(os.Stderr, "txload:", err)
		os.Exit(1)
	}
	fmt.Printf("%.0f\n", rate)
}

// parseTx splits the -tx text into commands and their arguments.
func parseTx(s string) ([][]string, error) {
	var tx [][]string
	for _, cmd := range strings.Split(s, "|") {
		if args := strings.Fields(cmd); len(args) > 0 {
			tx = append(tx, args)
		}
	}
	if len(tx) == 0 {
		return nil, errors.New("-tx names no command")
	}
	return tx, nil
}

// run runs the load and returns the transactions completed per second.
func run(c config) (float64, error) {
	var left, done atomic.Int64
	left.Store(c.total)
	var wg sync.WaitGroup
	errs := make(chan error, c.conns)
	deadline := time.Now().Add(c.dur)
	start := time.Now()
	for id := range c.conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n, err := worker(c, id, &left, deadline)
			done.Add(n)
			if err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(errs)
	if err := <-errs; err != nil {
		return 0, err
	}
	if n := done.Load(); n < c.total {
		return 0, fmt.Errorf("only %d of %d transactions in %v", n, c.total, c.dur)
	}
	return float64(done.Load()) / elapsed.Seconds(), nil
}

// worker sends batches of transactions, taking them from left, until
// none is left or the deadline passes; it returns how many completed.
func worker(c config, id int, left *atomic.Int64, deadline time.Time) (int64, error) {
	conn, err := net.DialTimeout("tcp", c.addr, 5*time.Second)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	conn.SetDeadline(deadline.Add(30 * time.Second))
	w := bufio.NewWriterSize(conn, 1<<16)
	r := bufio.NewReaderSize(conn, 1<<16)
	rng := rand.New(rand.NewPCG(uint64(id), 7))
	args := make([]string, 0, 16)
	var done int64
	for time.Now().Before(deadline) {
		batch := min(int64(c.depth), left.Add(-int64(c.depth))+int64(c.depth))
		if batch <= 0 {
			break
		}
		for range batch {
			key := c.prefix + strconv.Itoa(rng.IntN(c.keys))
			for _, cmd := range c.tx {
				args = args[:0]
				for _, a := range cmd {
					if a == "{k}" {
						a = key
					}
					args = append(args, a)
				}
				wire.WriteCmd(w, args...)
			}
		}
		if err := w.Flush(); err != nil {
			return done, err
		}
		for range batch {
			for range c.tx {
				if err := wire.ReadReply(r); err != nil {
					return done, err
				}
			}
			done++
		}
	}
	return done, nil
}
