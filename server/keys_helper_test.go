package server

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/turnstile/turnstile/clock"
	"github.com/turnstile/turnstile/shards"
)

// startKeysTestServer is newTestServer; the key tests call it by this name.
func startKeysTestServer(t testing.TB, mod ...func(*Config)) (*Server, string, *clock.Manual) {
	t.Helper()
	return newTestServer(t, mod...)
}

// keysEpoch is where the key tests' manual clock starts.
const keysEpoch = testEpoch

// keysClient returns a go-redis client for addr, closed when the test ends.
func keysClient(t testing.TB, addr string) *redis.Client {
	t.Helper()
	rc := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, DisableIdentity: true, MaxRetries: -1})
	t.Cleanup(func() { rc.Close() })
	return rc
}

// keysPut stores a string value directly in database db (the branch has no
// SET); exp is absolute Unix ns, 0 for none. It takes the key's shard lock.
func keysPut(s *Server, db int, key, val string, exp int64) {
	m := s.dbs[db]
	i := m.ShardOf([]byte(key))
	m.Lock(i)
	m.Put([]byte(key), shards.BytesEntry([]byte(val), exp))
	m.Unlock(i)
}

// keysEntry reads key's raw entry from database db without expiring it.
func keysEntry(s *Server, db int, key string, now int64) (shards.Entry, bool) {
	m := s.dbs[db]
	i := m.ShardOf([]byte(key))
	m.Lock(i)
	defer m.Unlock(i)
	return m.Get([]byte(key), now)
}

// keysConn is a raw RESP connection for tests that compare exact reply bytes.
type keysConn struct {
	t  testing.TB
	c  net.Conn
	br *bufio.Reader
}

func dialKeys(t testing.TB, addr string) *keysConn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &keysConn{t: t, c: c, br: bufio.NewReader(c)}
}

// do sends one command as a RESP array and returns the raw reply.
func (k *keysConn) do(args ...string) string {
	k.t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	k.c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(k.c, b.String()); err != nil {
		k.t.Fatalf("write: %v", err)
	}
	r, err := readRawReply(k.br)
	if err != nil {
		k.t.Fatalf("read reply to %q: %v", args, err)
	}
	return r
}

// keysResp builds expected replies: ints become ":n", strings starting with
// '+' or '-' are status/error lines, nil is the null bulk, []string an array
// of bulks, []any a nested array, anything else a bulk string.
func keysResp(v any) string {
	switch v := v.(type) {
	case int:
		return ":" + strconv.Itoa(v) + "\r\n"
	case int64:
		return ":" + strconv.FormatInt(v, 10) + "\r\n"
	case nil:
		return "$-1\r\n"
	case []string:
		s := "*" + strconv.Itoa(len(v)) + "\r\n"
		for _, e := range v {
			s += "$" + strconv.Itoa(len(e)) + "\r\n" + e + "\r\n"
		}
		return s
	case []any:
		s := "*" + strconv.Itoa(len(v)) + "\r\n"
		for _, e := range v {
			s += keysResp(e)
		}
		return s
	case string:
		if strings.HasPrefix(v, "+") || strings.HasPrefix(v, "-") {
			return v + "\r\n"
		}
		return "$" + strconv.Itoa(len(v)) + "\r\n" + v + "\r\n"
	}
	panic(fmt.Sprintf("keysResp: unsupported %T", v))
}
