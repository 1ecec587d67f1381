package script

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/turnstile/turnstile/command"
	"github.com/turnstile/turnstile/resp"
)

// fakeHost is a tiny keyspace of strings with GET, SET, INCR, PING and a
// noscript command, enough to test the engine without the server.
type fakeHost struct {
	kv   map[string]string
	logs []string
}

func (h *fakeHost) Lookup(args [][]byte) (int, command.Flag, bool) {
	switch strings.ToLower(string(args[0])) {
	case "get":
		return 2, command.Readonly, true
	case "set":
		return 3, command.Write, true
	case "incr":
		return 2, command.Write, true
	case "ping":
		return -1, 0, true
	case "multi":
		return 1, command.NoScript, true
	}
	return 0, 0, false
}

func (h *fakeHost) Call(args [][]byte, w *resp.Writer) {
	switch strings.ToLower(string(args[0])) {
	case "get":
		if v, ok := h.kv[string(args[1])]; ok {
			w.BulkString(v)
		} else {
			w.Null()
		}
	case "set":
		h.kv[string(args[1])] = string(args[2])
		w.OK()
	case "incr":
		n, err := strconv.ParseInt(h.kv[string(args[1])], 10, 64)
		if err != nil && h.kv[string(args[1])] != "" {
			w.Error("ERR value is not an integer or out of range")
			return
		}
		h.kv[string(args[1])] = strconv.FormatInt(n+1, 10)
		w.Int(n + 1)
	case "ping":
		w.Status("PONG")
	}
}

func (h *fakeHost) Log(level int, msg string) { h.logs = append(h.logs, strconv.Itoa(level)+" "+msg) }

func eval(t *testing.T, e *Engine, h *fakeHost, body string, keys ...string) string {
	t.Helper()
	var w resp.Writer
	req := &Request{Body: []byte(body), Host: h, W: &w}
	for _, k := range keys {
		req.Keys = append(req.Keys, []byte(k))
	}
	e.Run(req)
	return string(w.Bytes())
}

func TestEngineReplies(t *testing.T) {
	e := New(Config{Version: "7.0.15", VersionNum: 0x07000f})
	defer e.Close()
	h := &fakeHost{kv: map[string]string{"s": "abc"}}
	sha := func(body string) string { return SHA1Hex([]byte(body)) }
	cases := []struct{ body, want string }{
		{"return 1", ":1\r\n"},
		{"return 3.99", ":3\r\n"},
		{"return -3.99", ":-3\r\n"},
		{"return 1e20", ":-9223372036854775808\r\n"},
		{"return 'x'", "$1\r\nx\r\n"},
		{"return true", ":1\r\n"},
		{"return false", "$-1\r\n"},
		{"return nil", "$-1\r\n"},
		{"return {1,2,3.7,'x',true,false,nil,5}", "*6\r\n:1\r\n:2\r\n:3\r\n$1\r\nx\r\n:1\r\n$-1\r\n"},
		{"return {err='foo'}", "-foo\r\n"},
		{"return {ok='fine'}", "+fine\r\n"},
		{"return redis.error_reply('bad')", "-ERR bad\r\n"},
		{"return redis.error_reply('-XX x')", "-XX x\r\n"},
		{"return redis.status_reply('FINE')", "+FINE\r\n"},
		{"return {1,{2,{3}},{err='in'}}", "*3\r\n:1\r\n*2\r\n:2\r\n*1\r\n:3\r\n-in\r\n"},
		{"return redis.call('ping')", "+PONG\r\n"},
		{"return type(redis.call('ping'))", "$5\r\ntable\r\n"},
		{"return tostring(redis.call('get','nokey'))", "$5\r\nfalse\r\n"},
		{"return {tostring(1e14), tostring(99999999999999), tostring(2^53), tostring(0.1), tostring(1/0)}",
			"*5\r\n$5\r\n1e+14\r\n$14\r\n99999999999999\r\n$18\r\n9.007199254741e+15\r\n$3\r\n0.1\r\n$3\r\ninf\r\n"},
		{"return tostring(-0)", "$2\r\n-0\r\n"},
		{"return tostring(0)", "$1\r\n0\r\n"},
		{"return redis.sha1hex('')", "$40\r\nda39a3ee5e6b4b0d3255bfef95601890afd80709\r\n"},
		{"return redis.call('incr', KEYS[1])", "-ERR value is not an integer or out of range script: " + sha("return redis.call('incr', KEYS[1])") + ", on @user_script:1.\r\n"},
		{"return redis.pcall('incr', KEYS[1])", "-ERR value is not an integer or out of range\r\n"},
		{"return redis.call('nosuch')", "-ERR Unknown Redis command called from script script: " + sha("return redis.call('nosuch')") + ", on @user_script:1.\r\n"},
		{"return redis.call('get')", "-ERR Wrong number of args calling Redis command from script script: " + sha("return redis.call('get')") + ", on @user_script:1.\r\n"},
		{"x=1", "-ERR user_script:1: Attempt to modify a readonly table script: " + sha("x=1") + ", on @user_script:1.\r\n"},
		{"return y", "-ERR user_script:1: Script attempted to access nonexistent global variable 'y' script: " + sha("return y") + ", on @user_script:1.\r\n"},
		{"return redis.call('multi')", "-ERR This Redis command is not allowed from script script: " + sha("return redis.call('multi')") + ", on @user_script:1.\r\n"},
		{"error('boom')", "-ERR user_script:1: boom script: " + sha("error('boom')") + ", on @user_script:1.\r\n"},
		{"error({err='XX foo'})", "-XX foo script: " + sha("error({err='XX foo'})") + ", on @user_script:1.\r\n"},
		{"string.x = 1", "-ERR user_script:1: Attempt to modify a readonly table script: " + sha("string.x = 1") + ", on @user_script:1.\r\n"},
		{"redis.call = nil", "-ERR user_script:1: Attempt to modify a readonly table script: " + sha("redis.call = nil") + ", on @user_script:1.\r\n"},
		{"local ok, e = pcall(redis.call, 'incr', KEYS[1]); return {type(e), e}", "*2\r\n$6\r\nstring\r\n$43\r\nERR value is not an integer or out of range\r\n"},
		{"return redis.call('set','a',1.5)", "+OK\r\n"},
		{"return redis.call('get','a')", "$3\r\n1.5\r\n"},
		{"return redis.call('set','a',true)", "-ERR Lua redis lib command arguments must be strings or integers script: " + sha("return redis.call('set','a',true)") + ", on @user_script:1.\r\n"},
		{"return tostring(os)", "-ERR user_script:1: Script attempted to access nonexistent global variable 'os' script: " + sha("return tostring(os)") + ", on @user_script:1.\r\n"},
		{"return _VERSION", "$7\r\nLua 5.1\r\n"},
		{"return redis.REDIS_VERSION", "$6\r\n7.0.15\r\n"},
		{"return rawget(_G, 'x')", "$-1\r\n"},
		{"return type(rawget(_G, 'redis'))", "$5\r\ntable\r\n"},
		{"rawset(_G, 'x', 1)", "-ERR Attempt to modify a readonly table script: " + sha("rawset(_G, 'x', 1)") + ", on @user_script:1.\r\n"},
		{"return redis.setresp(4)", "-ERR RESP version must be 2 or 3. script: " + sha("return redis.setresp(4)") + ", on @user_script:1.\r\n"},
		{"local f = loadstring('zz = 1'); local ok, err = pcall(f); return err", "$46\r\n<string>:1: Attempt to modify a readonly table\r\n"},
	}
	for _, c := range cases {
		if got := eval(t, e, h, c.body, "s"); got != c.want {
			t.Errorf("%s:\n got %q\nwant %q", c.body, got, c.want)
		}
	}
}

// TestEvalCacheBounded: EVAL caches at most maxEvalScripts scripts (the
// least recently used go first); scripts SCRIPT LOAD loaded stay.
func TestEvalCacheBounded(t *testing.T) {
	e := New(Config{})
	defer e.Close()
	h := &fakeHost{kv: map[string]string{}}
	loaded, err := e.Load([]byte("return 'kept'"))
	if err != nil {
		t.Fatal(err)
	}
	first := "return 0"
	eval(t, e, h, first)
	for i := 1; i <= maxEvalScripts+50; i++ {
		eval(t, e, h, "return "+strconv.Itoa(i))
		if i%100 == 0 {
			eval(t, e, h, first) // recently used: kept
		}
	}
	if got := e.Cached(); got != maxEvalScripts+1 {
		t.Fatalf("cached %d scripts, want %d", got, maxEvalScripts+1)
	}
	if !e.Exists([]byte(loaded)) || !e.Exists([]byte(SHA1Hex([]byte(first)))) {
		t.Fatal("a loaded or recently used script was dropped")
	}
	if e.Exists([]byte(SHA1Hex([]byte("return 1")))) {
		t.Fatal("the least recently used script was kept")
	}
	e.Flush()
	if e.Cached() != 0 || e.Exists([]byte(loaded)) {
		t.Fatal("Flush kept scripts")
	}
}

// TestNativeCachedFollowsCache: NativeCached, EVALSHA's lock-free lookup
// of a native's script, agrees with Exists through SCRIPT LOAD, EVAL's
// cache and its evictions, and SCRIPT FLUSH.
func TestNativeCachedFollowsCache(t *testing.T) {
	body, err := os.ReadFile("../libtest/testdata/scripts/redis_rate-allowN.lua")
	if err != nil {
		t.Fatal(err)
	}
	nat := NativeFor([]byte(SHA1Hex(body)))
	if nat == nil {
		t.Fatal("redis_rate allowN is not a native")
	}
	e := New(Config{Version: "7.2.0"})
	check := func(when string, want bool) {
		t.Helper()
		if got, exists := e.NativeCached(nat), e.Exists([]byte(nat.SHA)); got != want || exists != want {
			t.Fatalf("%s: NativeCached %v, Exists %v, want %v", when, got, exists, want)
		}
	}
	check("new engine", false)
	if err := e.Cache(body); err != nil {
		t.Fatal(err)
	}
	check("cached by EVAL", true)
	for i := 0; i < maxEvalScripts; i++ { // EVAL's cache is full: the oldest goes
		if err := e.Cache([]byte("return " + strconv.Itoa(i))); err != nil {
			t.Fatal(err)
		}
	}
	check("evicted", false)
	if _, err := e.Load(body); err != nil {
		t.Fatal(err)
	}
	check("loaded", true)
	e.Flush()
	check("flushed", false)
}

// TestKillTwice: a script can be killed (twice over: the second Kill, or
// a Stop after it, changes nothing), and so can the next one, which runs
// under a new kill switch; a script that is not killed runs to its end.
func TestKillTwice(t *testing.T) {
	e := New(Config{})
	defer e.Close()
	h := &fakeHost{kv: map[string]string{}}
	for round := range 2 {
		done := make(chan string, 1)
		go func() { done <- eval(t, e, h, "while true do end") }()
		deadline := time.Now().Add(5 * time.Second)
		for {
			if _, running := e.Running(); running {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the script never ran")
			}
			time.Sleep(time.Millisecond)
		}
		if msg := e.Kill(); msg != "" {
			t.Fatalf("round %d: Kill: %s", round, msg)
		}
		e.Kill()
		e.Stop()
		select {
		case got := <-done:
			if !strings.Contains(got, "Script killed by user with SCRIPT KILL") {
				t.Fatalf("round %d: killed script replied %q", round, got)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("round %d: the killed script did not end", round)
		}
		if got := eval(t, e, h, "local n = 0 for i = 1, 1000 do n = n + 1 end return n"); got != ":1000\r\n" {
			t.Fatalf("round %d: the next script replied %q", round, got)
		}
	}
	if msg := e.Kill(); msg != ErrNotBusy {
		t.Fatalf("Kill with no script: %q", msg)
	}
}

// TestArgsAcrossRuns: KEYS and ARGV are exactly the run's own, whatever
// the runs before them were given or did to the tables (fill keeps a
// value equal to the last run's at its position).
func TestArgsAcrossRuns(t *testing.T) {
	e := New(Config{})
	defer e.Close()
	h := &fakeHost{kv: map[string]string{}}
	const show = "local out = {} for i = 1, #KEYS do out[#out + 1] = 'k' .. KEYS[i] end " +
		"for i = 1, #ARGV do out[#out + 1] = 'a' .. ARGV[i] end return table.concat(out, ',')"
	runs := []struct {
		body       string
		keys, args []string
	}{
		{show, []string{"x"}, []string{"1", "2", "3"}},
		{show, []string{"x"}, []string{"1", "2", "3"}},
		{show, []string{"y", "x"}, []string{"1", "", "3", "4"}},
		{"ARGV[2] = 'changed' KEYS[1] = 'z' return 1", []string{"y", "x"}, []string{"1", "", "3", "4"}},
		{show, []string{"y", "x"}, []string{"1", "", "3", "4"}},
		{"ARGV[9] = 'hole' ARGV.extra = 1 return 1", []string{"y"}, []string{"1"}},
		{show, []string{"y"}, []string{"1"}},
		{"KEYS.extra = 1 ARGV.extra = 2 return 1", []string{"y"}, []string{"1"}},
		{"return tostring(KEYS.extra) .. ',' .. tostring(ARGV.extra)", []string{"y"}, []string{"1"}}, // nil,nil
		{show, nil, []string{"12", "1"}},
		{show, []string{"a", "b", "c"}, nil},
		{show, []string{"a", "b"}, []string{"1"}},
	}
	for i, r := range runs {
		var w resp.Writer
		req := &Request{Body: []byte(r.body), Host: h, W: &w}
		var want []string
		for _, k := range r.keys {
			req.Keys = append(req.Keys, []byte(k))
			want = append(want, "k"+k)
		}
		for _, a := range r.args {
			req.Args = append(req.Args, []byte(a))
			want = append(want, "a"+a)
		}
		e.Run(req)
		if strings.HasPrefix(r.body, "return tostring(KEYS.extra)") {
			if got := string(w.Bytes()); got != "$7\r\nnil,nil\r\n" {
				t.Errorf("run %d: fields of the last run's tables: %q", i, got)
			}
			continue
		}
		if r.body != show {
			continue
		}
		s := strings.Join(want, ",")
		if got, w := string(w.Bytes()), "$"+strconv.Itoa(len(s))+"\r\n"+s+"\r\n"; got != w {
			t.Errorf("run %d: got %q, want %q", i, got, w)
		}
	}
}
