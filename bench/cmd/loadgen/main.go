// Command loadgen writes a RESP request stream that creates n distinct keys,
// for `redis-cli --pipe`. The memory and key-scaling parts of bench/run.sh
// use it: redis-benchmark's __rand_int__ draws keys at random, so it cannot
// create exactly n distinct keys.
//
// Keys are "key:%012d" for 0 <= i < n: 16 bytes each, and exactly the names
// redis-benchmark generates for "key:__rand_int__" with -r n, so a later
// benchmark run with -r n touches the loaded keys.
//
//	loadgen -mode turnstile -n 1000000   # CL.THROTTLE <key> 0 1 3600
//	loadgen -mode redis -n 1000000       # SET <key> <19-digit ns> PX 3600000
//	loadgen -mode turnstile -ttl 5 ...   # CL.THROTTLE <key> 0 1 5: gone in 5 s
//	loadgen -mode redis -ttl 5 ...       # SET <key> <ns> PX 5000
//
// -ttl sets the period (and so the TTL) of every key, in seconds; the
// expiry part of bench/run.sh uses a short one so that all keys expire.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"
)

func main() {
	mode := flag.String("mode", "turnstile", "turnstile: CL.THROTTLE <key> 0 1 <ttl>; redis: SET <key> <ns> PX <ttl in ms>")
	n := flag.Int("n", 1000000, "number of distinct keys")
	ttl := flag.Int("ttl", 3600, "seconds until each key expires (the limiter's period)")
	flag.Parse()
	if *n < 0 || int64(*n) > 1e12 || *ttl < 1 || *ttl > 1e9 || flag.NArg() > 0 {
		flag.Usage()
		os.Exit(2)
	}
	w := bufio.NewWriterSize(os.Stdout, 1<<20)
	var err error
	switch *mode {
	case "turnstile":
		err = writeThrottle(w, *n, *ttl)
	case "redis":
		// The TAT a fresh "0 1 <ttl>" limiter stores: now + ttl, in Unix ns
		// (19 digits until 2286).
		d := time.Duration(*ttl) * time.Second
		err = writeSet(w, *n, time.Now().Add(d).UnixNano(), d.Milliseconds())
	default:
		fmt.Fprintf(os.Stderr, "loadgen: unknown -mode %q\n", *mode)
		os.Exit(2)
	}
	if err == nil {
		err = w.Flush()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		os.Exit(1)
	}
}

// key appends the 16-byte key for i: "key:" and 12 zero-padded digits.
func key(dst []byte, i int) []byte {
	dst = append(dst, "key:"...)
	var digits [12]byte
	for j := len(digits) - 1; j >= 0; j-- {
		digits[j] = byte('0' + i%10)
		i /= 10
	}
	return append(dst, digits[:]...)
}

// bulk appends one RESP bulk string.
func bulk(dst, s []byte) []byte {
	dst = append(dst, '$')
	dst = strconv.AppendInt(dst, int64(len(s)), 10)
	dst = append(dst, "\r\n"...)
	dst = append(dst, s...)
	return append(dst, "\r\n"...)
}

func writeThrottle(w io.Writer, n, ttl int) error {
	var buf, k []byte
	period := []byte(strconv.Itoa(ttl))
	for i := 0; i < n; i++ {
		k = key(k[:0], i)
		buf = append(buf[:0], "*5\r\n$11\r\nCL.THROTTLE\r\n"...)
		buf = bulk(buf, k)
		buf = append(buf, "$1\r\n0\r\n$1\r\n1\r\n"...)
		buf = bulk(buf, period)
		if _, err := w.Write(buf); err != nil {
			return err
		}
	}
	return nil
}

func writeSet(w io.Writer, n int, tat, ttlMS int64) error {
	var buf, k, v []byte
	px := strconv.AppendInt(nil, ttlMS, 10)
	for i := 0; i < n; i++ {
		k = key(k[:0], i)
		// A distinct value per key, as real TATs would be.
		v = strconv.AppendInt(v[:0], tat+int64(i), 10)
		buf = append(buf[:0], "*5\r\n$3\r\nSET\r\n"...)
		buf = bulk(buf, k)
		buf = bulk(buf, v)
		buf = append(buf, "$2\r\nPX\r\n"...)
		buf = bulk(buf, px)
		if _, err := w.Write(buf); err != nil {
			return err
		}
	}
	return nil
}
