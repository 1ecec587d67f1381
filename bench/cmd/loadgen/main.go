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
	mode := flag.String("mode", "turnstile", "turnstile: CL.THROTTLE <key> 0 1 3600; redis: SET <key> <ns> PX 3600000")
	n := flag.Int("n", 1000000, "number of distinct keys")
	flag.Parse()
	if *n < 0 || *n > 1e12 || flag.NArg() > 0 {
		flag.Usage()
		os.Exit(2)
	}
	w := bufio.NewWriterSize(os.Stdout, 1<<20)
	var err error
	switch *mode {
	case "turnstile":
		err = writeThrottle(w, *n)
	case "redis":
		// The TAT a fresh "0 1 3600" limiter stores: now + 1 h, in Unix ns
		// (19 digits until 2286).
		err = writeSet(w, *n, time.Now().Add(time.Hour).UnixNano())
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

func writeThrottle(w io.Writer, n int) error {
	var buf, k []byte
	for i := 0; i < n; i++ {
		k = key(k[:0], i)
		buf = append(buf[:0], "*5\r\n$11\r\nCL.THROTTLE\r\n"...)
		buf = bulk(buf, k)
		buf = append(buf, "$1\r\n0\r\n$1\r\n1\r\n$4\r\n3600\r\n"...)
		if _, err := w.Write(buf); err != nil {
			return err
		}
	}
	return nil
}

func writeSet(w io.Writer, n int, tat int64) error {
	var buf, k, v []byte
	for i := 0; i < n; i++ {
		k = key(k[:0], i)
		// A distinct value per key, as real TATs would be.
		v = strconv.AppendInt(v[:0], tat+int64(i), 10)
		buf = append(buf[:0], "*5\r\n$3\r\nSET\r\n"...)
		buf = bulk(buf, k)
		buf = bulk(buf, v)
		buf = append(buf, "$2\r\nPX\r\n$7\r\n3600000\r\n"...)
		if _, err := w.Write(buf); err != nil {
			return err
		}
	}
	return nil
}
