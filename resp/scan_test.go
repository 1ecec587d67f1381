package resp

import (
	"bytes"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// validReplies are whole replies of every type, as Redis writes them.
var validReplies = []string{
	"+OK\r\n",
	"-ERR unknown command 'x'\r\n",
	":0\r\n",
	":-42\r\n",
	"$3\r\nabc\r\n",
	"$0\r\n\r\n",
	"$-1\r\n",
	"$4\r\na\r\nb\r\n", // CRLF inside the data
	"*0\r\n",
	"*-1\r\n",
	"*2\r\n$1\r\na\r\n:1\r\n",
	"*2\r\n*1\r\n+x\r\n*-1\r\n",
	"_\r\n",
	"#t\r\n",
	"#f\r\n",
	",3.14\r\n",
	",inf\r\n",
	"(3492890328409238509324850943850943825024385\r\n",
	"=15\r\ntxt:Some string\r\n",
	"!21\r\nSYNTAX invalid syntax\r\n",
	"%2\r\n+first\r\n:1\r\n+second\r\n*1\r\n:2\r\n",
	"~3\r\n:1\r\n:2\r\n:3\r\n",
	">3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$5\r\nhello\r\n",
	"|1\r\n+key-popularity\r\n%1\r\n$1\r\na\r\n,0.19\r\n*1\r\n:2\r\n",
	"%0\r\n",
}

func TestScanReplyWhole(t *testing.T) {
	for _, r := range validReplies {
		n, err := ScanReply([]byte(r))
		if err != nil || n != len(r) {
			t.Errorf("ScanReply(%q) = %d, %v; want %d", r, n, err, len(r))
		}
		// Followed by another reply: only the first is framed.
		two := r + "+next\r\n"
		if n, err := ScanReply([]byte(two)); err != nil || n != len(r) {
			t.Errorf("ScanReply(%q) = %d, %v; want %d", two, n, err, len(r))
		}
		// Every strict prefix is incomplete, not an error.
		for k := 0; k < len(r); k++ {
			if n, err := ScanReply([]byte(r[:k])); n != 0 || err != nil {
				t.Errorf("ScanReply(%q) = %d, %v; want 0, nil", r[:k], n, err)
			}
		}
	}
}

func TestScanReplyMalformed(t *testing.T) {
	for _, r := range []string{
		"x\r\n",
		"+OK\n",
		"$3\r\nabcd\r\n",
		"$-2\r\n",
		"$03\r\nabc\r\n",
		"$?\r\n",
		"*?\r\n",
		"*-2\r\n",
		"~-1\r\n",
		"%-1\r\n",
		"_x\r\n",
		"#x\r\n",
		"*1\r\nq\r\n",
		"$99999999999\r\n",
		"\r\n",
	} {
		if n, err := ScanReply([]byte(r)); err == nil {
			t.Errorf("ScanReply(%q) = %d, nil; want an error", r, n)
		}
	}
}

// TestScanReplyResumes feeds a long reply a few bytes at a time through
// one scanner: it frames it only once whole, and then exactly.
func TestScanReplyResumes(t *testing.T) {
	var b []byte
	b = append(b, "*1000\r\n"...)
	for i := range 1000 {
		b = append(b, "$"+strconv.Itoa(len(strconv.Itoa(i)))+"\r\n"+strconv.Itoa(i)+"\r\n"...)
	}
	whole := len(b)
	b = append(b, ":7\r\n"...)
	var s ReplyScanner
	for k := 0; k <= len(b); k += 7 {
		n, err := s.Scan(b[:k])
		if err != nil {
			t.Fatal(err)
		}
		if k < whole && n != 0 || k >= whole && n != whole {
			t.Fatalf("after %d bytes: %d, want %d", k, n, whole)
		}
		if n > 0 {
			break
		}
	}
	if n, err := s.Scan(b[whole:]); n != 4 || err != nil {
		t.Fatalf("next reply: %d, %v", n, err)
	}
}

// TestScanReplyGenerated frames streams of random well-formed replies.
func TestScanReplyGenerated(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 500 {
		checkGenerated(t, rng)
	}
}

func checkGenerated(t *testing.T, rng *rand.Rand) {
	t.Helper()
	var stream []byte
	var ends []int
	for range 1 + rng.IntN(5) {
		stream = genReply(stream, rng, 0)
		ends = append(ends, len(stream))
	}
	var s ReplyScanner
	start := 0
	for _, end := range ends {
		// Scan with the data arriving in random pieces.
		got := 0
		for k := start; got == 0; k = min(len(stream), k+1+rng.IntN(16)) {
			n, err := s.Scan(stream[start:k])
			if err != nil {
				t.Fatalf("stream %q: %v", stream, err)
			}
			got = n
			if k == len(stream) && n == 0 {
				t.Fatalf("stream %q: reply at %d not framed", stream, start)
			}
		}
		if start+got != end {
			t.Fatalf("stream %q: reply at %d framed as %d bytes, want %d", stream, start, got, end-start)
		}
		start = end
	}
}

// genReply appends a random well-formed reply.
func genReply(b []byte, rng *rand.Rand, depth int) []byte {
	hdr := func(t byte, n int) []byte { return appendHeader(b, t, n) }
	str := func() string { return strings.Repeat("x\r\n", rng.IntN(3)) + strings.Repeat("y", rng.IntN(5)) }
	k := rng.IntN(16)
	if depth > 3 {
		k %= 9
	}
	switch k {
	case 0:
		return append(b, "+OK\r\n"...)
	case 1:
		return append(b, "-ERR x\r\n"...)
	case 2:
		return append(strconv.AppendInt(append(b, ':'), rng.Int64N(1000)-500, 10), '\r', '\n')
	case 3:
		s := str()
		return append(append(hdr('$', len(s)), s...), '\r', '\n')
	case 4:
		return append(b, "$-1\r\n"...)
	case 5:
		return append(b, "_\r\n"...)
	case 6:
		return append(b, "#t\r\n"...)
	case 7:
		return append(b, ",1.5\r\n"...)
	case 8:
		return append(b, "*-1\r\n"...)
	}
	types := []byte{'*', '~', '>', '%', '|', '=', '!'}
	t := types[rng.IntN(len(types))]
	if t == '=' || t == '!' {
		s := "txt:" + str()
		return append(append(hdr(t, len(s)), s...), '\r', '\n')
	}
	n := rng.IntN(4)
	b = hdr(t, n)
	elems := n
	switch t {
	case '%':
		elems = 2 * n
	case '|':
		elems = 2*n + 1
	}
	for range elems {
		b = genReply(b, rng, depth+1)
	}
	return b
}

// FuzzScanReply checks the scanner's invariants on arbitrary input: it
// never panics; a framed reply is a prefix that frames to itself, every
// strict prefix of it is incomplete, and scanning it in pieces with one
// resumed scanner frames it the same.
func FuzzScanReply(f *testing.F) {
	for _, r := range validReplies {
		f.Add([]byte(r))
	}
	f.Add([]byte("*3\r\n$1\r\na\r\n%1\r\n+k\r\n|1\r\n+a\r\n+b\r\n:1\r\n+tail\r\n"))
	f.Add([]byte("$5\r\nab"))
	f.Add([]byte("*2\r\n*2\r\n*2\r\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		n, err := ScanReply(b)
		if err != nil {
			if n != 0 {
				t.Fatalf("error with length %d", n)
			}
			return
		}
		if n < 0 || n > len(b) {
			t.Fatalf("length %d of %d bytes", n, len(b))
		}
		if n == 0 {
			return
		}
		reply := b[:n]
		if m, err := ScanReply(reply); m != n || err != nil {
			t.Fatalf("the framed reply %q scans as %d, %v", reply, m, err)
		}
		for k := 0; k < n; k++ {
			if m, err := ScanReply(reply[:k]); m != 0 || err != nil {
				t.Fatalf("strict prefix %q of %q scans as %d, %v", reply[:k], reply, m, err)
			}
		}
		var s ReplyScanner
		for k := 1; k <= n; k++ {
			m, err := s.Scan(reply[:k])
			if err != nil || (m != 0) != (k == n) || k == n && m != n {
				t.Fatalf("resumed scan of %q at %d: %d, %v", reply, k, m, err)
			}
		}
		if !bytes.Equal(reply, b[:n]) {
			t.Fatal("input changed")
		}
	})
}

// FuzzScanGenerated frames streams of well-formed replies generated from
// the fuzzer's seed.
func FuzzScanGenerated(f *testing.F) {
	f.Add(uint64(1), uint64(2))
	f.Add(uint64(99), uint64(7))
	f.Fuzz(func(t *testing.T, a, b uint64) {
		checkGenerated(t, rand.New(rand.NewPCG(a, b)))
	})
}
