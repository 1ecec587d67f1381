package resp

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// parseAll runs the Reader over input delivered in chunks of size chunk
// (0: all at once) and returns the requests, joined by "|" between
// arguments and "\n" between requests, plus the first error.
func parseAll(input string, chunk int, lim Limits) (string, error) {
	return parseAhead(input, chunk, lim, 0)
}

// parseAhead is parseAll calling lookahead(ahead) after every request, as
// the connection loop does, and checking that each request parsed ahead is
// the one next returns later.
func parseAhead(input string, chunk int, lim Limits, ahead int) (string, error) {
	rd := NewReader(lim)
	src := &chunkReader{data: []byte(input), chunk: chunk}
	var out strings.Builder
	var want []string // requests lookahead has shown, oldest first
	for {
		for {
			args, ok, err := rd.Next(false)
			if err != nil {
				return out.String(), err
			}
			if !ok {
				break
			}
			got := string(bytes.Join(args, []byte("|")))
			if len(want) > 0 {
				if want[0] != got {
					return out.String(), fmt.Errorf("lookahead showed %q, next returned %q", want[0], got)
				}
				want = want[1:]
			}
			out.WriteString(got)
			out.WriteByte('\n')
			if ahead > 0 {
				n := rd.Lookahead(ahead)
				for j := len(want); j < n; j++ {
					var parts [][]byte
					for i := 0; rd.AheadArg(j, i) != nil; i++ {
						parts = append(parts, rd.AheadArg(j, i))
					}
					want = append(want, string(bytes.Join(parts, []byte("|"))))
				}
			}
		}
		if err := rd.Fill(src); err != nil {
			return out.String(), nil
		}
	}
}

type chunkReader struct {
	data  []byte
	chunk int
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, errors.New("EOF")
	}
	n := len(c.data)
	if c.chunk > 0 && n > c.chunk {
		n = c.chunk
	}
	n = copy(p, c.data[:n])
	c.data = c.data[n:]
	return n, nil
}

func TestReaderRequests(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"multibulk", "*2\r\n$3\r\nGET\r\n$1\r\nk\r\n", "GET|k\n"},
		{"pipeline", "*1\r\n$4\r\nPING\r\n*2\r\n$4\r\nECHO\r\n$0\r\n\r\n", "PING\nECHO|\n"},
		{"binary bulk", "*1\r\n$4\r\na\r\nb\r\n", "a\r\nb\n"},
		{"inline", "PING\r\n", "PING\n"},
		{"inline lf only", "SET a b\n", "SET|a|b\n"},
		{"inline quotes", "SET \"a b\" 'c d'\r\n", "SET|a b|c d\n"},
		{"inline escapes", "ECHO \"\\x41\\n\\t\\\\\"\r\n", "ECHO|A\n\t\\\n"},
		{"inline single quote escape", "ECHO 'it\\'s'\r\n", "ECHO|it's\n"},
		{"inline empty quoted", "ECHO \"\"\r\n", "ECHO|\n"},
		{"inline quote inside word", "ECHO a\"b c\"\r\n", "ECHO|ab c\n"},
		{"blank inline line", "\r\n\r\nPING\r\n", "\n\nPING\n"},
		{"zero multibulk", "*0\r\nPING\r\n", "\nPING\n"},
		{"negative multibulk", "*-1\r\nPING\r\n", "\nPING\n"},
	}
	for _, tc := range tests {
		for _, chunk := range []int{0, 1, 3} {
			got, err := parseAll(tc.in, chunk, DefaultLimits)
			if err != nil || got != tc.want {
				t.Errorf("%s (chunk %d): got %q, %v; want %q", tc.name, chunk, got, err, tc.want)
			}
		}
	}
}

func TestReaderProtocolErrors(t *testing.T) {
	small := DefaultLimits
	small.MaxBulkLen = 100
	small.MaxMultibulk = 50
	small.MaxInline = 64
	tests := []struct {
		name, in, want string
		lim            Limits
	}{
		// Regression: redcon v1.6.4 panicked on this (index out of range).
		{"huge bulk length", "*1\r\n$9223372036854775807\r\nab\r\n", "invalid bulk length", DefaultLimits},
		// Regression: redcon v1.6.4 spun forever on this.
		{"huge multibulk count", "*1000000000000000000\r\n", "invalid multibulk length", DefaultLimits},
		{"multibulk over limit", "*1048577\r\n", "invalid multibulk length", DefaultLimits},
		{"bulk over proto-max-bulk-len", "*1\r\n$101\r\n", "invalid bulk length", small},
		{"negative bulk", "*1\r\n$-1\r\n", "invalid bulk length", DefaultLimits},
		{"bad multibulk count", "*x\r\n", "invalid multibulk length", DefaultLimits},
		{"leading zero count", "*01\r\n$1\r\na\r\n", "invalid multibulk length", DefaultLimits},
		{"plus sign bulk", "*1\r\n$+1\r\na\r\n", "invalid bulk length", DefaultLimits},
		{"expected dollar", "*1\r\n:1\r\n", "expected '$', got ':'", DefaultLimits},
		{"unbalanced double", "ECHO \"abc\r\n", "unbalanced quotes in request", DefaultLimits},
		{"unbalanced single", "ECHO 'abc\r\n", "unbalanced quotes in request", DefaultLimits},
		{"text after quote", "ECHO \"a\"b\r\n", "unbalanced quotes in request", DefaultLimits},
		{"too big inline", strings.Repeat("a", 65), "too big inline request", small},
		{"too big mbulk count", "*" + strings.Repeat("1", 65), "too big mbulk count string", small},
		{"too big bulk count", "*1\r\n$" + strings.Repeat("1", 65), "too big bulk count string", small},
	}
	for _, tc := range tests {
		for _, chunk := range []int{0, 1} {
			_, err := parseAll(tc.in, chunk, tc.lim)
			var pe *ProtocolError
			if !errors.As(err, &pe) || pe.Msg != tc.want {
				t.Errorf("%s (chunk %d): got %v, want %q", tc.name, chunk, err, tc.want)
			}
		}
	}
}

func TestReaderUnauthLimits(t *testing.T) {
	rd := NewReader(DefaultLimits)
	rd.buf = append(rd.buf[:0], "*11\r\n"...)
	rd.w = len(rd.buf)
	rd.buf = rd.buf[:cap(rd.buf)]
	if _, _, err := rd.Next(true); err == nil || !strings.Contains(err.Error(), "unauthenticated multibulk length") {
		t.Fatalf("got %v", err)
	}
	rd = NewReader(DefaultLimits)
	n := copy(rd.buf, "*1\r\n$16385\r\n")
	rd.w = n
	if _, _, err := rd.Next(true); err == nil || !strings.Contains(err.Error(), "unauthenticated bulk length") {
		t.Fatalf("got %v", err)
	}
}

// TestReaderQueryBufferLimit checks that unprocessed input is bounded: a
// bulk announced within proto-max-bulk-len but bigger than the query buffer
// limit closes the client instead of growing without end.
func TestReaderQueryBufferLimit(t *testing.T) {
	lim := DefaultLimits
	lim.MaxQueryBuf = 1 << 20
	in := "*1\r\n$5000000\r\n" + strings.Repeat("x", 3<<20)
	rd := NewReader(lim)
	src := &chunkReader{data: []byte(in), chunk: 64 << 10}
	var err error
	for err == nil {
		if _, ok, perr := rd.Next(false); perr != nil || ok {
			t.Fatalf("unexpected request or error: %v", perr)
		}
		err = rd.Fill(src)
	}
	if !errors.Is(err, ErrQueryBufLimit) {
		t.Fatalf("got %v, want query buffer limit", err)
	}
	if len(rd.buf) > int(lim.MaxQueryBuf)+2*minReadSpace {
		t.Fatalf("buffer grew to %d bytes", len(rd.buf))
	}
}

// TestReaderLargeBulk checks a bulk much larger than the initial buffer,
// arriving in pieces, is assembled correctly.
func TestReaderLargeBulk(t *testing.T) {
	val := bytes.Repeat([]byte("0123456789"), 100_000)
	in := "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1000000\r\n" + string(val) + "\r\n"
	got, err := parseAll(in, 7000, DefaultLimits)
	if err != nil || got != "SET|k|"+string(val)+"\n" {
		t.Fatalf("large bulk mismatch (len %d), err %v", len(got), err)
	}
}

// FuzzReader feeds arbitrary bytes, whole and in small chunks: the Reader
// must never panic, and must produce the same requests either way.
func FuzzReader(f *testing.F) {
	for _, s := range []string{
		"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n", "PING\r\n", "SET \"a\\x41\" 'b'\n",
		"*1\r\n$9223372036854775807\r\nab\r\n", "*1000000000000000000\r\n",
		"*3\r\n$-5\r\n", "*1\r\n$0\r\n\r\n", "\"\r\n", "*1\r\n$1\r\n",
	} {
		f.Add([]byte(s), uint8(1))
	}
	lim := DefaultLimits
	lim.MaxBulkLen = 1 << 16
	lim.MaxQueryBuf = 1 << 18
	lim.MaxInline = 1 << 10
	f.Fuzz(func(t *testing.T, data []byte, chunk uint8) {
		whole, err1 := parseAll(string(data), 0, lim)
		pieces, err2 := parseAll(string(data), int(chunk%16)+1, lim)
		if (err1 == nil) != (err2 == nil) || (err1 != nil && err1.Error() != err2.Error()) {
			t.Fatalf("errors differ: whole %v, chunked %v", err1, err2)
		}
		if whole != pieces {
			t.Fatalf("requests differ:\nwhole   %q\nchunked %q", whole, pieces)
		}
		ahead, err3 := parseAhead(string(data), int(chunk%16)+1, lim, int(chunk/16)%MaxLookahead+1)
		if (err1 == nil) != (err3 == nil) || (err1 != nil && err1.Error() != err3.Error()) {
			t.Fatalf("errors differ: whole %v, with lookahead %v", err1, err3)
		}
		if whole != ahead {
			t.Fatalf("requests differ:\nwhole          %q\nwith lookahead %q", whole, ahead)
		}
	})
}

// TestReaderLookahead checks lookahead against next on pipelines that mix
// requests it parses ahead with those it must leave to next (inline, empty,
// incomplete, over the unauthenticated limits, malformed).
func TestReaderLookahead(t *testing.T) {
	big := strings.Repeat("v", 20000) // over MaxUnauthBulk: not parsed ahead
	inputs := []string{
		"*2\r\n$3\r\nGET\r\n$1\r\na\r\n*2\r\n$3\r\nGET\r\n$1\r\nb\r\n*2\r\n$3\r\nGET\r\n$1\r\nc\r\n",
		"*1\r\n$4\r\nPING\r\nPING\r\n*2\r\n$3\r\nGET\r\n$1\r\nx\r\n*0\r\n*1\r\n$4\r\nPING\r\n",
		"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$20000\r\n" + big + "\r\n*2\r\n$3\r\nGET\r\n$1\r\nk\r\n",
		"*2\r\n$3\r\nGET\r\n$1\r\na\r\n*2\r\n$3\r\nGET\r\n$1\r\nb\r\n*2\r\n$3\r\nGET\r\n$x\r\n",
		"*2\r\n$3\r\nGET\r\n$1\r\na\r\n*2\r\n$3\r\nGET\r\n$1\r\nb\r\n*2\r\n$3\r\nGE",
	}
	for _, in := range inputs {
		whole, err1 := parseAll(in, 0, DefaultLimits)
		for _, chunk := range []int{0, 1, 7, 30} {
			for ahead := 1; ahead <= MaxLookahead; ahead++ {
				got, err2 := parseAhead(in, chunk, DefaultLimits, ahead)
				if got != whole || fmt.Sprint(err1) != fmt.Sprint(err2) {
					t.Fatalf("input %.60q chunk %d ahead %d:\n got %q, %v\nwant %q, %v", in, chunk, ahead, got, err2, whole, err1)
				}
			}
		}
	}
	// The Reader must actually parse ahead on a plain pipeline.
	rd := NewReader(DefaultLimits)
	if err := rd.Fill(strings.NewReader(inputs[0])); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := rd.Next(false); !ok {
		t.Fatal("no first request")
	}
	if n := rd.Lookahead(2); n != 2 || string(rd.AheadArg(1, 1)) != "c" || rd.AheadArg(0, 2) != nil {
		t.Fatalf("lookahead(2) = %d, second request's key %q", n, rd.AheadArg(1, 1))
	}
}

// TestAheadSlot: the requests held ahead have distinct slots, and each
// keeps its slot (and its stage) while it moves up the lookahead.
func TestAheadSlot(t *testing.T) {
	rd := NewReader(DefaultLimits)
	var req []byte
	for i := 0; i < 3*MaxLookahead; i++ {
		req = AppendRequest(req, []byte("GET"), []byte(strconv.Itoa(i)))
	}
	buf, _ := rd.Space()
	rd.Advance(copy(buf, req))
	slotOf := map[int]int{} // request -> its slot when first seen ahead
	for i := 0; i < 3*MaxLookahead; i++ {
		n := rd.Lookahead(MaxLookahead)
		seen := map[int]bool{}
		for j := 0; j < n; j++ {
			slot := rd.AheadSlot(j)
			if slot < 0 || slot >= MaxLookahead || seen[slot] {
				t.Fatalf("request %d, %d ahead: slot %d (seen %v)", i+j, j, slot, seen)
			}
			seen[slot] = true
			key, _ := strconv.Atoi(string(rd.AheadArg(j, 1)))
			if _, ok := slotOf[key]; !ok {
				slotOf[key] = slot
				rd.SetAheadStage(j, uint8(key))
			} else if got := rd.AheadStage(j); int(got) != key || slot != slotOf[key] {
				t.Fatalf("request %d, %d ahead: slot %d stage %d", key, j, slot, got)
			}
		}
		if _, ok, _ := rd.Next(false); !ok {
			t.Fatalf("request %d missing", i)
		}
	}
}

// BenchmarkParseThrottleRequest measures the parse of one CL.THROTTLE
// request (without allocations).
func BenchmarkParseThrottleRequest(b *testing.B) {
	req := AppendRequest(nil, []byte("CL.THROTTLE"), []byte("user:0000000042"), []byte("15"), []byte("30"), []byte("60"))
	rd := NewReader(DefaultLimits)
	b.ReportAllocs()
	b.SetBytes(int64(len(req)))
	for i := 0; i < b.N; i++ {
		buf, _ := rd.Space()
		rd.Advance(copy(buf, req))
		if args, ok, err := rd.Next(false); !ok || err != nil || len(args) != 5 {
			b.Fatal("parse failed")
		}
	}
}

// TestReaderShrink: once a large request is consumed, Shrink gives the
// grown buffer back and the arguments returned stay intact; it keeps a
// buffer that holds unread input or a request in progress.
func TestReaderShrink(t *testing.T) {
	val := bytes.Repeat([]byte("v"), 1<<20)
	set := "*2\r\n$3\r\nSET\r\n$1048576\r\n" + string(val) + "\r\n"
	// readLarge fills rd from src until the SET is returned.
	readLarge := func(rd *Reader, src *chunkReader) [][]byte {
		for {
			if err := rd.Fill(src); err != nil {
				t.Fatal(err)
			}
			if a, ok, err := rd.Next(false); err != nil || ok {
				if err != nil || string(a[0]) != "SET" {
					t.Fatalf("%q %v", a, err)
				}
				return a
			}
		}
	}

	rd := NewReader(DefaultLimits)
	args := readLarge(rd, &chunkReader{data: []byte(set)})
	if rd.Size() <= 4*InitialReadBuf {
		t.Fatalf("buffer of %d bytes: did not grow", rd.Size())
	}
	rd.Shrink()
	if rd.Size() != InitialReadBuf {
		t.Fatalf("buffer of %d bytes kept after the large request, want %d", rd.Size(), InitialReadBuf)
	}
	if string(args[0]) != "SET" || !bytes.Equal(args[1], val) {
		t.Fatal("the large request's arguments changed")
	}
	if err := rd.Fill(&chunkReader{data: []byte("*1\r\n$4\r\nPING\r\n")}); err != nil {
		t.Fatal(err)
	}
	if a, ok, err := rd.Next(false); !ok || err != nil || string(a[0]) != "PING" {
		t.Fatalf("after Shrink: %q %v %v", a, ok, err)
	}

	rd = NewReader(DefaultLimits)
	src := &chunkReader{data: []byte(set + "*1\r\n$4\r\nPI")}
	readLarge(rd, src)
	grown := rd.Size()
	rd.Shrink() // "*1\r\n$4\r\nPI" may be unread: kept
	if rd.Buffered() > 0 && rd.Size() != grown {
		t.Fatalf("shrunk to %d with unread input", rd.Size())
	}
	for src.data != nil && len(src.data) > 0 {
		rd.Fill(src)
	}
	if _, ok, _ := rd.Next(false); ok {
		t.Fatal("half a request returned")
	}
	grown = rd.Size()
	rd.Shrink() // a request in progress: kept
	if rd.Size() != grown {
		t.Fatalf("shrunk to %d with a request in progress", rd.Size())
	}
	rd.Fill(&chunkReader{data: []byte("NG\r\n")})
	if a, ok, err := rd.Next(false); !ok || err != nil || string(a[0]) != "PING" {
		t.Fatalf("PING: %q %v %v", a, ok, err)
	}
}

// checkShortHeader compares shortHeader with anyHeader on data, and
// reports whether shortHeader took it.
func checkShortHeader(t *testing.T, data []byte, maxInline int) bool {
	t.Helper()
	n, end, ok := shortHeader(data, maxInline)
	if !ok {
		return false
	}
	lim := DefaultLimits
	lim.MaxInline = maxInline
	rd := NewReader(lim)
	wn, wend, err := rd.anyHeader(data, "bulk")
	if n != wn || end != wend || err != nil {
		t.Fatalf("%q (max inline %d): shortHeader %d, %d; anyHeader %d, %d, %v", data, maxInline, n, end, wn, wend, err)
	}
	return true
}

// TestShortHeader: the one-pass header reads the lines clients send as
// the general one does, and leaves it every other line.
func TestShortHeader(t *testing.T) {
	for _, s := range []string{"$3\r\nGET", "*8\r\n", "$0\r\n", "$40\r\nx", "*1\r\r", "$123456789012345678\r\n"} {
		if !checkShortHeader(t, []byte(s), DefaultLimits.MaxInline) {
			t.Errorf("%q: declined", s)
		}
	}
	for _, s := range []string{"$03\r\n", "$00\r\n", "$-1\r\n", "*-1\r\n", "$3\r", "$3", "$\r\n", "$3x\r\n",
		"$1234567890123456789\r\n", "$+3\r\n", "$ 3\r\n"} {
		if checkShortHeader(t, []byte(s), DefaultLimits.MaxInline) {
			t.Errorf("%q: taken", s)
		}
	}
	if checkShortHeader(t, []byte("$12345\r\n"), 4) { // '\r' beyond the inline limit: anyHeader's error
		t.Error("taken beyond the inline limit")
	}
}

// FuzzShortHeader: on any line, shortHeader declines or reads what
// anyHeader reads.
func FuzzShortHeader(f *testing.F) {
	for _, s := range []string{"$3\r\n", "*12\r\n", "$0\r\n", "$007\r\n", "$99999999999999999999\r\n"} {
		f.Add([]byte(s), uint8(64))
	}
	f.Fuzz(func(t *testing.T, data []byte, maxInline uint8) {
		if len(data) == 0 || data[0] == '\r' {
			return // header's callers start it at a '*' or a '$'
		}
		checkShortHeader(t, data, int(maxInline))
	})
}
