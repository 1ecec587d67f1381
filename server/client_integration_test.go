package server

import (
	"context"
	"fmt"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/turnstile/turnstile/clock"
)

// Integration tests with a real client library: go-redis v9 with its default
// options (RESP3: HELLO 3, CLIENT SETINFO, CLIENT MAINT_NOTIFICATIONS on
// connect) and with Protocol 2 (HELLO 2). Every case runs under both, as the
// subtests "resp2" and "resp3".

// itProtocols are the two go-redis configurations every client test runs.
var itProtocols = []struct {
	name  string
	proto int
}{{"resp2", 2}, {"resp3", 3}}

// itEnv is one subtest's server and go-redis client.
type itEnv struct {
	s     *Server
	addr  string
	clk   *clock.Manual
	rdb   *redis.Client
	proto int
	ctx   context.Context
}

// itContext returns a context that bounds a whole test.
func itContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// itGoRedis returns a go-redis client for addr. proto 3 keeps go-redis's
// default options (Protocol 0 means 3); proto 2 sets Protocol: 2.
func itGoRedis(t *testing.T, addr string, proto int, mod ...func(*redis.Options)) *redis.Client {
	t.Helper()
	opt := &redis.Options{Addr: addr}
	if proto == 2 {
		opt.Protocol = 2
	}
	for _, m := range mod {
		m(opt)
	}
	rdb := redis.NewClient(opt)
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// itEachProtocol runs f once per protocol, each with a fresh server.
func itEachProtocol(t *testing.T, f func(t *testing.T, e *itEnv), mod ...func(*Config)) {
	t.Helper()
	for _, p := range itProtocols {
		t.Run(p.name, func(t *testing.T) {
			s, addr, clk := newTestServer(t, mod...)
			e := &itEnv{s: s, addr: addr, clk: clk, proto: p.proto, ctx: itContext(t)}
			e.rdb = itGoRedis(t, addr, p.proto)
			f(t, e)
		})
	}
}

// itConn returns one pinned go-redis connection (for per-connection state).
func (e *itEnv) conn(t *testing.T) *redis.Conn {
	t.Helper()
	cn := e.rdb.Conn()
	t.Cleanup(func() { cn.Close() })
	return cn
}

// itDoer is a go-redis client or pinned connection.
type itDoer interface {
	Do(ctx context.Context, args ...any) *redis.Cmd
}

// itThrottle runs CL.THROTTLE through any go-redis client or connection.
func itThrottle(ctx context.Context, c itDoer, key string, nums ...int64) ([]int64, error) {
	args := []any{"CL.THROTTLE", key}
	for _, n := range nums {
		args = append(args, n)
	}
	return c.Do(ctx, args...).Int64Slice()
}

func itWantSlice(t *testing.T, what string, got []int64, err error, want ...int64) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("%s = %v, want %v", what, got, want)
	}
}

func itWantErr(t *testing.T, what string, err error, want string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: no error, want %q", what, want)
	}
	if err.Error() != want {
		t.Fatalf("%s: error %q, want %q", what, err.Error(), want)
	}
}

// itMap turns a RESP3 map or a RESP2 flat array (as go-redis returns them
// from Do) into a map with string keys.
func itMap(t *testing.T, v any) map[string]any {
	t.Helper()
	out := map[string]any{}
	switch m := v.(type) {
	case map[any]any:
		for k, v := range m {
			out[fmt.Sprint(k)] = v
		}
	case map[string]any:
		return m
	case []any:
		if len(m)%2 != 0 {
			t.Fatalf("odd-length map array: %v", m)
		}
		for i := 0; i < len(m); i += 2 {
			out[fmt.Sprint(m[i])] = m[i+1]
		}
	default:
		t.Fatalf("not a map: %T %v", v, v)
	}
	return out
}

// itVersionAtLeast reports whether a "major.minor.patch" version is >= major.minor.
func itVersionAtLeast(v string, major, minor int) bool {
	parts := strings.Split(v, ".")
	if len(parts) != 3 {
		return false
	}
	ma, err1 := strconv.Atoi(parts[0])
	mi, err2 := strconv.Atoi(parts[1])
	if _, err3 := strconv.Atoi(parts[2]); err1 != nil || err2 != nil || err3 != nil {
		return false
	}
	return ma > major || (ma == major && mi >= minor)
}

func TestIntegrationClientPingEcho(t *testing.T) {
	itEachProtocol(t, func(t *testing.T, e *itEnv) {
		if got, err := e.rdb.Ping(e.ctx).Result(); err != nil || got != "PONG" {
			t.Fatalf("PING = %q, %v", got, err)
		}
		if got, err := e.rdb.Do(e.ctx, "PING", "hello there").Text(); err != nil || got != "hello there" {
			t.Fatalf("PING msg = %q, %v", got, err)
		}
		for _, msg := range []string{"", "plain", "with\r\nnewline", "bin\x00\xff\xfe"} {
			if got, err := e.rdb.Echo(e.ctx, msg).Result(); err != nil || got != msg {
				t.Fatalf("ECHO %q = %q, %v", msg, got, err)
			}
		}
		itWantErr(t, "ECHO a b", e.rdb.Do(e.ctx, "ECHO", "a", "b").Err(),
			"ERR wrong number of arguments for 'echo' command")
		itWantErr(t, "PING a b", e.rdb.Do(e.ctx, "PING", "a", "b").Err(),
			"ERR wrong number of arguments for 'ping' command")
	})
}

func TestIntegrationClientHello(t *testing.T) {
	itEachProtocol(t, func(t *testing.T, e *itEnv) {
		cn := e.conn(t)
		id, err := cn.ClientID(e.ctx).Result()
		if err != nil || id <= 0 {
			t.Fatalf("CLIENT ID = %d, %v", id, err)
		}
		// The connect handshake went through HELLO <proto>.
		info, err := cn.ClientInfo(e.ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		if info.Resp != e.proto {
			t.Fatalf("negotiated resp=%d, want %d", info.Resp, e.proto)
		}
		for _, ver := range []int{2, 3, e.proto} {
			m, err := cn.Hello(e.ctx, ver, "", "", "").Result()
			if err != nil {
				t.Fatalf("HELLO %d: %v", ver, err)
			}
			if len(m) != 7 {
				t.Errorf("HELLO %d has %d fields: %v", ver, len(m), m)
			}
			if m["server"] != "redis" {
				t.Errorf("HELLO %d server = %#v", ver, m["server"])
			}
			v, ok := m["version"].(string)
			if !ok || !itVersionAtLeast(v, 7, 2) {
				t.Errorf("HELLO %d version = %#v, want a string >= 7.2", ver, m["version"])
			}
			if m["proto"] != int64(ver) {
				t.Errorf("HELLO %d proto = %#v, want int64 %d", ver, m["proto"], ver)
			}
			if m["id"] != id {
				t.Errorf("HELLO %d id = %#v, want int64 %d", ver, m["id"], id)
			}
			if m["mode"] != "standalone" {
				t.Errorf("HELLO %d mode = %#v", ver, m["mode"])
			}
			if m["role"] != "master" {
				t.Errorf("HELLO %d role = %#v", ver, m["role"])
			}
			if mods, ok := m["modules"].([]any); !ok || len(mods) != 0 {
				t.Errorf("HELLO %d modules = %#v, want an empty array", ver, m["modules"])
			}
			if info, err := cn.ClientInfo(e.ctx).Result(); err != nil || info.Resp != ver {
				t.Fatalf("after HELLO %d: resp=%v, %v", ver, info, err)
			}
		}
		itWantErr(t, "HELLO 4", cn.Hello(e.ctx, 4, "", "", "").Err(), "NOPROTO unsupported protocol version")
		itWantErr(t, "HELLO 1", cn.Hello(e.ctx, 1, "", "", "").Err(), "NOPROTO unsupported protocol version")
		itWantErr(t, "HELLO x", cn.Do(e.ctx, "HELLO", "x").Err(), "ERR Protocol version is not an integer or out of range")
		itWantErr(t, "HELLO 3 BOGUS", cn.Do(e.ctx, "HELLO", "3", "BOGUS").Err(), "ERR Syntax error in HELLO option 'BOGUS'")
		// A failed HELLO leaves the protocol alone.
		if info, err := cn.ClientInfo(e.ctx).Result(); err != nil || info.Resp != e.proto {
			t.Fatalf("after failed HELLOs: %v, %v", info, err)
		}
		// SETNAME in HELLO.
		if _, err := cn.Hello(e.ctx, e.proto, "", "", "via-hello").Result(); err != nil {
			t.Fatal(err)
		}
		if name, err := cn.ClientGetName(e.ctx).Result(); err != nil || name != "via-hello" {
			t.Fatalf("name after HELLO SETNAME = %q, %v", name, err)
		}
	})
}

// TestIntegrationClientHelloRaw checks the exact wire form of HELLO.
func TestIntegrationClientHelloRaw(t *testing.T) {
	_, addr, _ := newTestServer(t)
	rc := dialRaw(t, addr)
	id := rc.do("CLIENT", "ID")
	if !regexp.MustCompile(`^:[1-9][0-9]*\r\n$`).MatchString(id) {
		t.Fatalf("CLIENT ID = %q", id)
	}
	body := func(header, proto string) string {
		return header + "$6\r\nserver\r\n$5\r\nredis\r\n$7\r\nversion\r\n$" + strconv.Itoa(len(Version)) + "\r\n" + Version + "\r\n" +
			"$5\r\nproto\r\n" + proto + "$2\r\nid\r\n" + id + "$4\r\nmode\r\n$10\r\nstandalone\r\n$4\r\nrole\r\n$6\r\nmaster\r\n$7\r\nmodules\r\n*0\r\n"
	}
	if got, want := rc.do("HELLO"), body("*14\r\n", ":2\r\n"); got != want {
		t.Fatalf("HELLO =\n%q\nwant\n%q", got, want)
	}
	if got, want := rc.do("HELLO", "3"), body("%7\r\n", ":3\r\n"); got != want {
		t.Fatalf("HELLO 3 =\n%q\nwant\n%q", got, want)
	}
	// RESP3 from now on: a null is "_".
	if got := rc.do("CLIENT", "GETNAME"); got != "_\r\n" {
		t.Fatalf("CLIENT GETNAME in RESP3 = %q", got)
	}
	if got, want := rc.do("HELLO", "2"), body("*14\r\n", ":2\r\n"); got != want {
		t.Fatalf("HELLO 2 =\n%q\nwant\n%q", got, want)
	}
	if got := rc.do("CLIENT", "GETNAME"); got != "$-1\r\n" {
		t.Fatalf("CLIENT GETNAME in RESP2 = %q", got)
	}
	if got := rc.do("HELLO", "4"); got != "-NOPROTO unsupported protocol version\r\n" {
		t.Fatalf("HELLO 4 = %q", got)
	}
	// No password configured: HELLO AUTH default accepts any password.
	if got := rc.do("HELLO", "3", "AUTH", "default", "whatever", "SETNAME", "raw"); !strings.HasPrefix(got, "%7\r\n") {
		t.Fatalf("HELLO 3 AUTH SETNAME = %q", got)
	}
	if got := rc.do("CLIENT", "GETNAME"); got != "$3\r\nraw\r\n" {
		t.Fatalf("name after HELLO SETNAME = %q", got)
	}
	if got := rc.do("HELLO", "3", "AUTH", "nobody", "x"); got != "-WRONGPASS invalid username-password pair or user is disabled.\r\n" {
		t.Fatalf("HELLO AUTH unknown user = %q", got)
	}
}

func TestIntegrationClientCommands(t *testing.T) {
	itEachProtocol(t, func(t *testing.T, e *itEnv) {
		cn := e.conn(t)
		id, err := cn.ClientID(e.ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		// Unnamed: GETNAME is a null in both protocols.
		if name, err := cn.ClientGetName(e.ctx).Result(); err != redis.Nil || name != "" {
			t.Fatalf("GETNAME before SETNAME = %q, %v; want redis.Nil", name, err)
		}
		if ok, err := cn.ClientSetName(e.ctx, "it-worker-1").Result(); err != nil || !ok {
			t.Fatalf("SETNAME = %v, %v", ok, err)
		}
		if name, err := cn.ClientGetName(e.ctx).Result(); err != nil || name != "it-worker-1" {
			t.Fatalf("GETNAME = %q, %v", name, err)
		}
		itWantErr(t, "SETNAME with space", cn.ClientSetName(e.ctx, "bad name").Err(),
			"ERR Client names cannot contain spaces, newlines or special characters.")
		itWantErr(t, "SETNAME with newline", cn.ClientSetName(e.ctx, "bad\nname").Err(),
			"ERR Client names cannot contain spaces, newlines or special characters.")
		// The name is unchanged by the failed attempts.
		if name, err := cn.ClientGetName(e.ctx).Result(); err != nil || name != "it-worker-1" {
			t.Fatalf("GETNAME after failed SETNAME = %q, %v", name, err)
		}

		// go-redis sent CLIENT SETINFO LIB-NAME/LIB-VER on connect.
		info, err := cn.ClientInfo(e.ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		wantLib := "go-redis(," + runtime.Version() + ")"
		if info.ID != id || info.Name != "it-worker-1" || info.Resp != e.proto || info.DB != 0 ||
			info.LibName != wantLib || info.LibVer != redis.Version() || info.User != "default" {
			t.Fatalf("CLIENT INFO = %+v\nwant id=%d name=it-worker-1 resp=%d db=0 lib-name=%s lib-ver=%s user=default",
				info, id, e.proto, wantLib, redis.Version())
		}
		if err := cn.ClientSetInfo(e.ctx, redis.WithLibraryName("ratelimiter")).Err(); err != nil {
			t.Fatalf("CLIENT SETINFO LIB-NAME: %v", err)
		}
		if err := cn.ClientSetInfo(e.ctx, redis.WithLibraryVersion("1.2.3")).Err(); err != nil {
			t.Fatalf("CLIENT SETINFO LIB-VER: %v", err)
		}
		info, err = cn.ClientInfo(e.ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		if want := "go-redis(ratelimiter," + runtime.Version() + ")"; info.LibName != want || info.LibVer != "1.2.3" {
			t.Fatalf("after SETINFO: lib-name=%q lib-ver=%q, want %q and 1.2.3", info.LibName, info.LibVer, want)
		}
		itWantErr(t, "SETINFO bad attr", cn.Do(e.ctx, "CLIENT", "SETINFO", "lib-colour", "x").Err(),
			"ERR Unrecognized option 'lib-colour'")
		itWantErr(t, "SETINFO arity", cn.Do(e.ctx, "CLIENT", "SETINFO", "lib-ver").Err(),
			"ERR wrong number of arguments for 'client|setinfo' command")
		itWantErr(t, "CLIENT bogus", cn.Do(e.ctx, "CLIENT", "bogus").Err(),
			"ERR unknown subcommand 'bogus'. Try CLIENT HELP.")

		// CLIENT LIST has one line per connection, ours among them.
		other := dialRaw(t, e.addr)
		if got := other.do("CLIENT", "SETNAME", "raw-peer"); got != "+OK\r\n" {
			t.Fatalf("raw SETNAME = %q", got)
		}
		list, err := cn.ClientList(e.ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSuffix(list, "\n"), "\n")
		if len(lines) != e.s.Clients() {
			t.Fatalf("CLIENT LIST has %d lines, server has %d clients:\n%s", len(lines), e.s.Clients(), list)
		}
		var sawSelf, sawPeer bool
		for _, l := range lines {
			if strings.HasPrefix(l, fmt.Sprintf("id=%d ", id)) {
				sawSelf = strings.Contains(l, " name=it-worker-1 ") && strings.Contains(l, fmt.Sprintf(" resp=%d ", e.proto)) &&
					strings.Contains(l, " lib-ver=1.2.3")
			}
			if strings.Contains(l, " name=raw-peer ") {
				sawPeer = strings.Contains(l, " resp=2 ") && strings.Contains(l, " cmd=client")
			}
		}
		if !sawSelf || !sawPeer {
			t.Fatalf("CLIENT LIST missing self (%v) or peer (%v):\n%s", sawSelf, sawPeer, list)
		}
		// CLIENT LIST ID filters.
		one, err := cn.Do(e.ctx, "CLIENT", "LIST", "ID", id).Text()
		if err != nil || !strings.HasPrefix(one, fmt.Sprintf("id=%d ", id)) || strings.Count(one, "\n") != 1 {
			t.Fatalf("CLIENT LIST ID %d = %q, %v", id, one, err)
		}
	})
}

func TestIntegrationClientSelect(t *testing.T) {
	itEachProtocol(t, func(t *testing.T, e *itEnv) {
		cn := e.conn(t)
		for db := 0; db < 16; db++ {
			if err := cn.Select(e.ctx, db).Err(); err != nil {
				t.Fatalf("SELECT %d: %v", db, err)
			}
			if info, err := cn.ClientInfo(e.ctx).Result(); err != nil || info.DB != db {
				t.Fatalf("after SELECT %d: %+v, %v", db, info, err)
			}
		}
		itWantErr(t, "SELECT 16", cn.Select(e.ctx, 16).Err(), "ERR DB index is out of range")
		itWantErr(t, "SELECT -1", cn.Select(e.ctx, -1).Err(), "ERR DB index is out of range")
		itWantErr(t, "SELECT x", cn.Do(e.ctx, "SELECT", "x").Err(), "ERR value is not an integer or out of range")
		// A failed SELECT keeps the database (15).
		if info, err := cn.ClientInfo(e.ctx).Result(); err != nil || info.DB != 15 {
			t.Fatalf("after failed SELECT: %+v, %v", info, err)
		}
		// Databases are separate keyspaces.
		if err := cn.Select(e.ctx, 3).Err(); err != nil {
			t.Fatal(err)
		}
		r, err := itThrottle(e.ctx, cn, "sel", 15, 30, 60)
		itWantSlice(t, "CL.THROTTLE in db 3", r, err, 0, 16, 15, -1, 2)
		if n, err := cn.DBSize(e.ctx).Result(); err != nil || n != 1 {
			t.Fatalf("DBSIZE db 3 = %d, %v", n, err)
		}
		if err := cn.Select(e.ctx, 0).Err(); err != nil {
			t.Fatal(err)
		}
		if n, err := cn.DBSize(e.ctx).Result(); err != nil || n != 0 {
			t.Fatalf("DBSIZE db 0 = %d, %v", n, err)
		}
		r, err = itThrottle(e.ctx, cn, "sel", 15, 30, 60)
		itWantSlice(t, "CL.THROTTLE in db 0", r, err, 0, 16, 15, -1, 2)
		// go-redis Options.DB selects on connect.
		rdb5 := itGoRedis(t, e.addr, e.proto, func(o *redis.Options) { o.DB = 5 })
		if info, err := rdb5.ClientInfo(e.ctx).Result(); err != nil || info.DB != 5 {
			t.Fatalf("Options.DB=5: %+v, %v", info, err)
		}
	})
}

func TestIntegrationClientInfo(t *testing.T) {
	itEachProtocol(t, func(t *testing.T, e *itEnv) {
		cn := e.conn(t)
		all, err := cn.Info(e.ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{
			"# Server\r\n", "\r\nredis_mode:standalone\r\n", "\r\nloading:0\r\n",
			"# Clients\r\n", "\r\nconnected_clients:1\r\n", "\r\nrole:master\r\n",
			"\r\nmaxclients:10000\r\n", "# Keyspace\r\n",
		} {
			if !strings.Contains(all, want) {
				t.Errorf("INFO lacks %q", want)
			}
		}
		m := regexp.MustCompile(`(?m)^redis_version:([0-9.]+)\r$`).FindStringSubmatch(all)
		if m == nil || !itVersionAtLeast(m[1], 7, 2) {
			t.Errorf("INFO redis_version = %v, want >= 7.2", m)
		}
		if !strings.HasPrefix(all, "# Server\r\nredis_version:") {
			t.Errorf("INFO does not start with # Server / redis_version: %q", all[:min(len(all), 60)])
		}
		// A second connection is counted.
		dialRaw(t, e.addr).do("PING")
		if clients, err := cn.Info(e.ctx, "clients").Result(); err != nil || !strings.Contains(clients, "\r\nconnected_clients:2\r\n") {
			t.Errorf("INFO clients with 2 connections = %q, %v", clients, err)
		}
		server, err := cn.Info(e.ctx, "server").Result()
		if err != nil || !strings.HasPrefix(server, "# Server\r\n") || strings.Contains(server, "# Clients") {
			t.Errorf("INFO server = %q, %v", server, err)
		}
		// Keyspace: empty first, then one line per non-empty database.
		if ks, err := cn.Info(e.ctx, "keyspace").Result(); err != nil || ks != "# Keyspace\r\n" {
			t.Fatalf("INFO keyspace on empty server = %q, %v", ks, err)
		}
		for _, k := range []string{"a", "b"} {
			if _, err := itThrottle(e.ctx, cn, k, 15, 30, 60); err != nil {
				t.Fatal(err)
			}
		}
		if err := cn.Select(e.ctx, 5).Err(); err != nil {
			t.Fatal(err)
		}
		if _, err := itThrottle(e.ctx, cn, "c", 15, 30, 60); err != nil {
			t.Fatal(err)
		}
		ks, err := cn.Info(e.ctx, "keyspace").Result()
		if err != nil {
			t.Fatal(err)
		}
		re := regexp.MustCompile(`^# Keyspace\r\ndb0:keys=2,expires=2,avg_ttl=[0-9]+\r\ndb5:keys=1,expires=1,avg_ttl=[0-9]+\r\n$`)
		if !re.MatchString(ks) {
			t.Fatalf("INFO keyspace after writes = %q", ks)
		}
	})
}

func TestIntegrationClientConfigGet(t *testing.T) {
	itEachProtocol(t, func(t *testing.T, e *itEnv) {
		got, err := e.rdb.ConfigGet(e.ctx, "maxclients").Result()
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got["maxclients"] != "123" {
			t.Fatalf("CONFIG GET maxclients = %v", got)
		}
		if got, err := e.rdb.ConfigGet(e.ctx, "MAXCLIE*").Result(); err != nil || len(got) != 1 || got["maxclients"] != "123" {
			t.Fatalf("CONFIG GET MAXCLIE* = %v, %v", got, err)
		}
		if got, err := e.rdb.ConfigGet(e.ctx, "no-such-param").Result(); err != nil || len(got) != 0 {
			t.Fatalf("CONFIG GET no-such-param = %v, %v", got, err)
		}
		// redis-cli --stat and redis-benchmark read these.
		got, err = e.rdb.ConfigGet(e.ctx, "databases").Result()
		if err != nil || got["databases"] != "16" {
			t.Fatalf("CONFIG GET databases = %v, %v", got, err)
		}
		if err := e.rdb.ConfigSet(e.ctx, "maxclients", "200").Err(); err != nil {
			t.Fatal(err)
		}
		if got, err := e.rdb.ConfigGet(e.ctx, "maxclients").Result(); err != nil || got["maxclients"] != "200" {
			t.Fatalf("CONFIG GET after SET = %v, %v", got, err)
		}
	}, func(c *Config) { c.MaxClients = 123 })
}

func TestIntegrationClientTime(t *testing.T) {
	itEachProtocol(t, func(t *testing.T, e *itEnv) {
		got, err := e.rdb.Time(e.ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		if want := time.Unix(0, testEpoch); !got.Equal(want) {
			t.Fatalf("TIME = %v, want %v", got, want)
		}
		// Microsecond resolution: the 7 ns are dropped.
		e.clk.Advance(1500*time.Millisecond + 250*time.Microsecond + 7)
		got, err = e.rdb.Time(e.ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		if want := time.Unix(1_700_000_001, 500_250_000); !got.Equal(want) {
			t.Fatalf("TIME after advance = %v, want %v", got, want)
		}
		raw, err := e.rdb.Do(e.ctx, "TIME").StringSlice()
		if err != nil || len(raw) != 2 || raw[0] != "1700000001" || raw[1] != "500250" {
			t.Fatalf("raw TIME = %q, %v", raw, err)
		}
	})
}

func TestIntegrationClientDBSizeFlushAll(t *testing.T) {
	itEachProtocol(t, func(t *testing.T, e *itEnv) {
		cn := e.conn(t)
		if n, err := cn.DBSize(e.ctx).Result(); err != nil || n != 0 {
			t.Fatalf("DBSIZE empty = %d, %v", n, err)
		}
		for _, k := range []string{"k1", "k2", "k3"} {
			if _, err := itThrottle(e.ctx, cn, k, 15, 30, 60); err != nil {
				t.Fatal(err)
			}
		}
		// Calls on an existing key do not add keys.
		if _, err := itThrottle(e.ctx, cn, "k1", 15, 30, 60); err != nil {
			t.Fatal(err)
		}
		if n, err := cn.DBSize(e.ctx).Result(); err != nil || n != 3 {
			t.Fatalf("DBSIZE = %d, %v; want 3", n, err)
		}
		if err := cn.Select(e.ctx, 1).Err(); err != nil {
			t.Fatal(err)
		}
		if _, err := itThrottle(e.ctx, cn, "k1", 15, 30, 60); err != nil {
			t.Fatal(err)
		}
		if n, err := cn.DBSize(e.ctx).Result(); err != nil || n != 1 {
			t.Fatalf("DBSIZE db 1 = %d, %v; want 1", n, err)
		}
		// FLUSHDB empties only the selected database.
		if err := cn.FlushDB(e.ctx).Err(); err != nil {
			t.Fatal(err)
		}
		if n, err := cn.DBSize(e.ctx).Result(); err != nil || n != 0 {
			t.Fatalf("DBSIZE db 1 after FLUSHDB = %d, %v", n, err)
		}
		if _, err := itThrottle(e.ctx, cn, "k1", 15, 30, 60); err != nil {
			t.Fatal(err)
		}
		if err := cn.Select(e.ctx, 0).Err(); err != nil {
			t.Fatal(err)
		}
		if n, err := cn.DBSize(e.ctx).Result(); err != nil || n != 3 {
			t.Fatalf("DBSIZE db 0 after FLUSHDB of db 1 = %d, %v; want 3", n, err)
		}
		// FLUSHALL empties every database.
		if got, err := cn.FlushAll(e.ctx).Result(); err != nil || got != "OK" {
			t.Fatalf("FLUSHALL = %q, %v", got, err)
		}
		for _, db := range []int{0, 1} {
			if n := e.s.dbs[db].Len(); n != 0 {
				t.Fatalf("db %d has %d keys after FLUSHALL", db, n)
			}
		}
		if n, err := cn.DBSize(e.ctx).Result(); err != nil || n != 0 {
			t.Fatalf("DBSIZE after FLUSHALL = %d, %v", n, err)
		}
		// A flushed limiter starts over.
		r, err := itThrottle(e.ctx, cn, "k1", 15, 30, 60)
		itWantSlice(t, "CL.THROTTLE after FLUSHALL", r, err, 0, 16, 15, -1, 2)
		if err := cn.FlushAllAsync(e.ctx).Err(); err != nil {
			t.Fatalf("FLUSHALL ASYNC: %v", err)
		}
		itWantErr(t, "FLUSHALL bogus", cn.Do(e.ctx, "FLUSHALL", "bogus").Err(), "ERR syntax error")
		itWantErr(t, "DBSIZE x", cn.Do(e.ctx, "DBSIZE", "x").Err(), "ERR wrong number of arguments for 'dbsize' command")
	})
}

func TestIntegrationClientCommandIntrospection(t *testing.T) {
	itEachProtocol(t, func(t *testing.T, e *itEnv) {
		n, err := e.rdb.Do(e.ctx, "COMMAND", "COUNT").Int64()
		if err != nil {
			t.Fatal(err)
		}
		if n != int64(len(e.s.table.Commands())) || n < 21 {
			t.Fatalf("COMMAND COUNT = %d, table has %d", n, len(e.s.table.Commands()))
		}
		// go-redis parses the whole COMMAND reply (10 fields per command).
		cmds, err := e.rdb.Command(e.ctx).Result()
		if err != nil {
			t.Fatalf("COMMAND: %v", err)
		}
		if int64(len(cmds)) != n {
			t.Fatalf("COMMAND lists %d commands, COUNT says %d", len(cmds), n)
		}
		ct := cmds["cl.throttle"]
		if ct == nil {
			t.Fatalf("COMMAND lacks cl.throttle")
		}
		if ct.Arity != -1 || ct.FirstKeyPos != 1 || ct.LastKeyPos != 1 || ct.StepCount != 1 || ct.ReadOnly {
			t.Fatalf("cl.throttle info = %+v", ct)
		}
		flags := strings.Join(ct.Flags, ",")
		if !strings.Contains(","+flags+",", ",write,") {
			t.Fatalf("cl.throttle flags %q lack write", flags)
		}
		for _, bad := range []string{"readonly", "fast", "denyoom"} {
			if strings.Contains(","+flags+",", ","+bad+",") {
				t.Fatalf("cl.throttle flags %q have %s (redis-cell registers write only)", flags, bad)
			}
		}
		for name, c := range map[string]struct{ arity, first, last, step int8 }{
			"ping": {-1, 0, 0, 0}, "echo": {2, 0, 0, 0}, "watch": {-2, 1, -1, 1}, "exec": {1, 0, 0, 0},
		} {
			got := cmds[name]
			if got == nil || got.Arity != c.arity || got.FirstKeyPos != c.first || got.LastKeyPos != c.last || got.StepCount != c.step {
				t.Errorf("COMMAND %s = %+v, want %+v", name, got, c)
			}
		}

		// COMMAND INFO, any case, and null for unknown names.
		v, err := e.rdb.Do(e.ctx, "COMMAND", "INFO", "CL.THROTTLE", "no-such-command").Slice()
		if err != nil {
			t.Fatal(err)
		}
		if len(v) != 2 || v[1] != nil {
			t.Fatalf("COMMAND INFO = %#v", v)
		}
		entry, ok := v[0].([]any)
		if !ok || len(entry) != 10 {
			t.Fatalf("COMMAND INFO cl.throttle entry = %#v", v[0])
		}
		if entry[0] != "cl.throttle" || entry[1] != int64(-1) || entry[3] != int64(1) || entry[4] != int64(1) || entry[5] != int64(1) {
			t.Fatalf("COMMAND INFO cl.throttle = %#v", entry)
		}
		if fl := fmt.Sprint(entry[2]); !strings.Contains(fl, "write") {
			t.Fatalf("COMMAND INFO cl.throttle flags = %v", fl)
		}
		specs, ok := entry[8].([]any)
		if !ok || len(specs) != 1 {
			t.Fatalf("COMMAND INFO cl.throttle key specs = %#v", entry[8])
		}
		spec := itMap(t, specs[0])
		if fl := fmt.Sprint(spec["flags"]); fl != "[RW access update]" {
			t.Fatalf("key spec flags = %v, want [RW access update]", fl)
		}
		bs := itMap(t, spec["begin_search"])
		if bs["type"] != "index" || itMap(t, bs["spec"])["index"] != int64(1) {
			t.Fatalf("begin_search = %v", bs)
		}
		fk := itMap(t, spec["find_keys"])
		fks := itMap(t, fk["spec"])
		if fk["type"] != "range" || fks["lastkey"] != int64(0) || fks["keystep"] != int64(1) || fks["limit"] != int64(0) {
			t.Fatalf("find_keys = %v / %v", fk, fks)
		}

		// COMMAND GETKEYS.
		keys, err := e.rdb.CommandGetKeys(e.ctx, "CL.THROTTLE", "k", 15, 30, 60).Result()
		if err != nil || fmt.Sprint(keys) != "[k]" {
			t.Fatalf("COMMAND GETKEYS CL.THROTTLE k 15 30 60 = %v, %v", keys, err)
		}
		keys, err = e.rdb.CommandGetKeys(e.ctx, "WATCH", "a", "b", "c").Result()
		if err != nil || fmt.Sprint(keys) != "[a b c]" {
			t.Fatalf("COMMAND GETKEYS WATCH a b c = %v, %v", keys, err)
		}
		itWantErr(t, "GETKEYS PING x", e.rdb.CommandGetKeys(e.ctx, "PING", "x").Err(), "ERR The command has no key arguments")
		itWantErr(t, "GETKEYS nosuch", e.rdb.CommandGetKeys(e.ctx, "nosuch", "k").Err(), "ERR Invalid command specified")

		// COMMAND DOCS.
		docs, err := e.rdb.Do(e.ctx, "COMMAND", "DOCS", "cl.throttle").Result()
		if err != nil {
			t.Fatal(err)
		}
		dm := itMap(t, docs)
		if len(dm) != 1 {
			t.Fatalf("COMMAND DOCS cl.throttle = %v", dm)
		}
		doc := itMap(t, dm["cl.throttle"])
		if doc["group"] != "module" || doc["since"] != "0.5.0" || doc["summary"] == "" || doc["summary"] == nil {
			t.Fatalf("COMMAND DOCS cl.throttle = %v", doc)
		}
		all, err := e.rdb.Do(e.ctx, "COMMAND", "DOCS").Result()
		if err != nil || int64(len(itMap(t, all))) != n {
			t.Fatalf("COMMAND DOCS has %d entries, want %d (%v)", len(itMap(t, all)), n, err)
		}
		itWantErr(t, "COMMAND bogus", e.rdb.Do(e.ctx, "COMMAND", "bogus").Err(), "ERR unknown subcommand 'bogus'. Try COMMAND HELP.")
	})
}

func TestIntegrationClientUnknownCommand(t *testing.T) {
	itEachProtocol(t, func(t *testing.T, e *itEnv) {
		itWantErr(t, "no args", e.rdb.Do(e.ctx, "nosuchcmd").Err(),
			"ERR unknown command 'nosuchcmd', with args beginning with: ")
		itWantErr(t, "two args", e.rdb.Do(e.ctx, "NoSuchCmd", "a", "b c").Err(),
			"ERR unknown command 'NoSuchCmd', with args beginning with: 'a' 'b c' ")
		itWantErr(t, "newline in name", e.rdb.Do(e.ctx, "bad\r\ncmd", "x\ny").Err(),
			"ERR unknown command 'bad  cmd', with args beginning with: 'x y' ")
		// The connection is still fine afterwards.
		if got, err := e.rdb.Ping(e.ctx).Result(); err != nil || got != "PONG" {
			t.Fatalf("PING after unknown command = %q, %v", got, err)
		}
	})
}

// TestIntegrationUnknownCommandLongArgs checks Redis's truncation of the
// argument list in the unknown-command error: Redis adds arguments while
// the argument part alone is shorter than 128 bytes, and cuts the last one
// to fill up to 128 (verified against redis-server 7.0.15). The command name
// is cut at 128 bytes.
func TestIntegrationUnknownCommandLongArgs(t *testing.T) {
	_, addr, _ := newTestServer(t)
	rc := dialRaw(t, addr)
	a50 := strings.Repeat("a", 50)
	want := "-ERR unknown command 'nosuch', with args beginning with: '" + a50 + "' '" + a50 + "' '" +
		strings.Repeat("a", 22) + "' \r\n"
	if got := rc.do("nosuch", a50, a50, a50); got != want {
		t.Errorf("unknown command with long args:\n got %q\nwant %q", got, want)
	}
	long := strings.Repeat("x", 200)
	want = "-ERR unknown command '" + strings.Repeat("x", 128) + "', with args beginning with: \r\n"
	if got := rc.do(long); got != want {
		t.Errorf("unknown long command name:\n got %q\nwant %q", got, want)
	}
	want = "-ERR unknown command 'z', with args beginning with: '" + strings.Repeat("b", 128) + "' \r\n"
	if got := rc.do("z", strings.Repeat("b", 300), "c"); got != want {
		t.Errorf("unknown command with one long arg:\n got %q\nwant %q", got, want)
	}
}

// TestIntegrationClientPasswordOption connects go-redis with Options.Password
// (HELLO <proto> AUTH default <pass>) to a server with requirepass.
func TestIntegrationClientPasswordOption(t *testing.T) {
	itEachProtocol(t, func(t *testing.T, e *itEnv) {
		// e.rdb has no password: every command is refused after HELLO fails.
		err := e.rdb.Ping(e.ctx).Err()
		if err == nil || !strings.HasPrefix(err.Error(), "NOAUTH ") {
			t.Fatalf("PING without password: %v, want NOAUTH", err)
		}
		good := itGoRedis(t, e.addr, e.proto, func(o *redis.Options) { o.Password = "s3cret" })
		if got, err := good.Ping(e.ctx).Result(); err != nil || got != "PONG" {
			t.Fatalf("PING with password = %q, %v", got, err)
		}
		info, err := good.ClientInfo(e.ctx).Result()
		if err != nil || info.Resp != e.proto {
			t.Fatalf("CLIENT INFO with password = %+v, %v", info, err)
		}
		r, err := itThrottle(e.ctx, good, "pw", 15, 30, 60)
		itWantSlice(t, "CL.THROTTLE with password", r, err, 0, 16, 15, -1, 2)
		user := itGoRedis(t, e.addr, e.proto, func(o *redis.Options) { o.Username = "default"; o.Password = "s3cret" })
		if got, err := user.Ping(e.ctx).Result(); err != nil || got != "PONG" {
			t.Fatalf("PING with username+password = %q, %v", got, err)
		}
		bad := itGoRedis(t, e.addr, e.proto, func(o *redis.Options) { o.Password = "wrong"; o.MaxRetries = -1 })
		err = bad.Ping(e.ctx).Err()
		if err == nil || !strings.Contains(err.Error(), "WRONGPASS invalid username-password pair or user is disabled.") {
			t.Fatalf("PING with wrong password: %v, want WRONGPASS", err)
		}
	}, func(c *Config) { c.RequirePass = "s3cret" })
}

// TestIntegrationClientCommandListFilter: COMMAND LIST FILTERBY PATTERN
// returns only the matching names (redis-server 7.0.15: "COMMAND LIST
// FILTERBY pattern ping" -> [ping]).
func TestIntegrationClientCommandListFilter(t *testing.T) {
	itEachProtocol(t, func(t *testing.T, e *itEnv) {
		all, err := e.rdb.CommandList(e.ctx, nil).Result()
		if err != nil || len(all) != len(e.s.table.All()) {
			t.Fatalf("COMMAND LIST = %d names, %v", len(all), err)
		}
		got, err := e.rdb.CommandList(e.ctx, &redis.FilterBy{Pattern: "ping"}).Result()
		if err != nil || fmt.Sprint(got) != "[ping]" {
			t.Errorf("COMMAND LIST FILTERBY PATTERN ping = %v, %v", got, err)
		}
		got, err = e.rdb.CommandList(e.ctx, &redis.FilterBy{Pattern: "cl.*"}).Result()
		if err != nil || fmt.Sprint(got) != "[cl.throttle]" {
			t.Errorf("COMMAND LIST FILTERBY PATTERN cl.* = %v, %v", got, err)
		}
	})
}

// TestIntegrationClientCommandInfoKeySpecFlags: WATCH only reads its keys,
// so Redis's key spec flags for it are [RO] (redis-server 7.0.15); a
// writing command such as CL.THROTTLE has [RW access update].
func TestIntegrationClientCommandInfoKeySpecFlags(t *testing.T) {
	_, addr, _ := newTestServer(t)
	rc := dialRaw(t, addr)
	got := rc.do("COMMAND", "INFO", "watch")
	if !strings.Contains(got, "$5\r\nflags\r\n*1\r\n+RO\r\n$12\r\nbegin_search\r\n") {
		t.Errorf("COMMAND INFO watch key spec flags: %q, want [RO]", got)
	}
	got = rc.do("COMMAND", "INFO", "cl.throttle")
	if !strings.Contains(got, "$5\r\nflags\r\n*3\r\n+RW\r\n+access\r\n+update\r\n$12\r\nbegin_search\r\n") {
		t.Errorf("COMMAND INFO cl.throttle key spec flags: %q, want [RW access update]", got)
	}
}

// TestIntegrationClientConfigSetErrors: Redis's texts for a bad maxclients
// (redis-server 7.0.15).
func TestIntegrationClientConfigSetErrors(t *testing.T) {
	_, addr, _ := newTestServer(t)
	rc := dialRaw(t, addr)
	const pre = "-ERR CONFIG SET failed (possibly related to argument 'maxclients') - "
	if got := rc.do("CONFIG", "SET", "maxclients", "abc"); got != pre+"argument couldn't be parsed into an integer\r\n" {
		t.Errorf("CONFIG SET maxclients abc = %q", got)
	}
	if got := rc.do("CONFIG", "SET", "maxclients", "0"); got != pre+"argument must be between 1 and 4294967295 inclusive\r\n" {
		t.Errorf("CONFIG SET maxclients 0 = %q", got)
	}
	if got := rc.do("CONFIG", "GET", "maxclients"); got != "*2\r\n$10\r\nmaxclients\r\n$5\r\n10000\r\n" {
		t.Errorf("maxclients after failed SETs = %q", got)
	}
}
