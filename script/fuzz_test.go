package script

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/turnstile/turnstile/resp"
)

// FuzzEval runs arbitrary script text with one key and one argument: the
// engine must never panic, always answer exactly one well-formed reply,
// and stay usable for the next script.
func FuzzEval(f *testing.F) {
	for _, s := range []string{
		"return 1", "return {1,'a',{err='x'}}", "return redis.call('get', KEYS[1])",
		"return redis.pcall('incr', KEYS[1])", "error('x')", "x = 1", "return cjson.encode({a=ARGV[1]})",
		"return cmsgpack.unpack(ARGV[1])", "local t = {} t[1] = t return t", "return redis.setresp(3)",
		"#!lua flags=no-writes\nreturn 1", "return tonumber(ARGV[1]) + 1", "return {double=1.5}",
		"return string.format('%q', ARGV[1])", "return struct.unpack('>I2', ARGV[1])",
	} {
		f.Add(s, "7")
	}
	e := New(Config{Version: "7.2.0"})
	defer e.Close()
	h := &fakeHost{kv: map[string]string{"s": "abc", "n": "5"}}
	f.Fuzz(func(t *testing.T, body, arg string) {
		if len(body) > 300 || strings.Contains(body, "rep") || strings.Contains(body, "while") ||
			strings.Contains(body, "for") || strings.Contains(body, "repeat") || strings.Contains(body, "goto") {
			return // bounded work only: loops and huge strings are the time limit's business
		}
		var w resp.Writer
		stop := time.AfterFunc(2*time.Second, e.Stop)
		e.Run(&Request{Body: []byte(body), Keys: [][]byte{[]byte("s")}, Args: [][]byte{[]byte(arg)}, Host: h, W: &w})
		stop.Stop()
		if rest, ok := wellFormed(w.Bytes(), 0); !ok || len(rest) != 0 {
			t.Fatalf("script %q: reply %q is not one well-formed RESP value", body, w.Bytes())
		}
		var w2 resp.Writer
		e.Run(&Request{Body: []byte("return 42"), Host: h, W: &w2})
		if string(w2.Bytes()) != ":42\r\n" {
			t.Fatalf("after script %q the engine answers %q", body, w2.Bytes())
		}
	})
}

// wellFormed checks one RESP2/RESP3 value at the start of b.
func wellFormed(b []byte, depth int) ([]byte, bool) {
	if len(b) < 3 || depth > 2000 {
		return nil, false
	}
	i := bytes.Index(b, []byte("\r\n"))
	if i < 1 {
		return nil, false
	}
	line, rest := b[1:i], b[i+2:]
	switch b[0] {
	case '+', '-', ',', '(', '#', '_':
		return rest, true
	case ':':
		_, err := strconv.ParseInt(string(line), 10, 64)
		return rest, err == nil
	case '$', '=':
		n, err := strconv.Atoi(string(line))
		if err != nil || n < -1 {
			return nil, false
		}
		if n == -1 {
			return rest, b[0] == '$'
		}
		if len(rest) < n+2 || string(rest[n:n+2]) != "\r\n" {
			return nil, false
		}
		return rest[n+2:], true
	case '*', '~', '%':
		n, err := strconv.Atoi(string(line))
		if err != nil || n < -1 {
			return nil, false
		}
		if b[0] == '%' {
			n *= 2
		}
		for range n {
			var ok bool
			if rest, ok = wellFormed(rest, depth+1); !ok {
				return nil, false
			}
		}
		return rest, true
	}
	return nil, false
}
