package server

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestACLServiceUser is the README's use case with go-redis: a user that
// may only call CL.THROTTLE on rl:* gets Redis's NOPERM errors for
// anything else, at top level, inside MULTI (when queued) and in scripts.
func TestACLServiceUser(t *testing.T) {
	_, addr, _ := newTestServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	admin := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DisableIdentity: true})
	defer admin.Close()
	if err := admin.Do(ctx, "ACL", "SETUSER", "svc", "on", ">pw", "~rl:*", "+cl.throttle").Err(); err != nil {
		t.Fatal(err)
	}
	svc := redis.NewClient(&redis.Options{Addr: addr, Username: "svc", Password: "pw", MaxRetries: -1, DisableIdentity: true})
	defer svc.Close()
	if got, err := svc.Do(ctx, "CL.THROTTLE", "rl:x", "15", "30", "60").Slice(); err != nil || len(got) != 5 {
		t.Fatalf("CL.THROTTLE rl:x = %v, %v", got, err)
	}
	wantErr := func(what string, err error, want string) {
		t.Helper()
		if err == nil || err.Error() != want {
			t.Errorf("%s: error %v, want %q", what, err, want)
		}
	}
	const noKey = "NOPERM this user has no permissions to access one of the keys used as arguments"
	wantErr("CL.THROTTLE other:x", svc.Do(ctx, "CL.THROTTLE", "other:x", "15", "30", "60").Err(), noKey)
	wantErr("GET rl:x", svc.Get(ctx, "rl:x").Err(), "NOPERM this user has no permissions to run the 'get' command")
	wantErr("EVAL", svc.Eval(ctx, "return 1", nil).Err(), "NOPERM this user has no permissions to run the 'eval' command")
	if who, err := svc.Do(ctx, "ACL", "WHOAMI").Result(); err == nil {
		t.Errorf("ACL WHOAMI allowed: %v", who)
	}

	// MULTI is refused to svc; a user with MULTI sees the check when queued.
	if err := admin.Do(ctx, "ACL", "SETUSER", "svc", "+multi", "+exec").Err(); err != nil {
		t.Fatal(err)
	}
	_, err := svc.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Do(ctx, "CL.THROTTLE", "rl:y", "1", "1", "60")
		p.Do(ctx, "CL.THROTTLE", "other:y", "1", "1", "60")
		return nil
	})
	if err == nil || !strings.Contains(err.Error(), "EXECABORT") {
		t.Errorf("MULTI with a refused command: %v, want EXECABORT", err)
	}

	// Scripts: redis.call of a forbidden command is Redis's script error.
	if err := admin.Do(ctx, "ACL", "SETUSER", "svc", "+eval").Err(); err != nil {
		t.Fatal(err)
	}
	err = svc.Eval(ctx, "return redis.call('get', 'rl:x')", nil).Err()
	if err == nil || !strings.HasPrefix(err.Error(), "ERR The user executing the script can't run this command or subcommand") {
		t.Errorf("script calling GET: %v", err)
	}
	if err := svc.Eval(ctx, "return redis.call('cl.throttle', 'rl:s', 1, 1, 60)", nil).Err(); err != nil {
		t.Errorf("script calling CL.THROTTLE rl:s: %v", err)
	}

	// ACL LOG has the denials, newest first.
	entries, err := admin.Do(ctx, "ACL", "LOG").Slice()
	if err != nil || len(entries) < 4 {
		t.Fatalf("ACL LOG = %v, %v", entries, err)
	}
	first, ok := entries[0].(map[any]any)
	if !ok {
		t.Fatalf("ACL LOG entry %T", entries[0])
	}
	if first["reason"] != "command" || first["context"] != "lua" || first["object"] != "get" || first["username"] != "svc" {
		t.Errorf("newest ACL LOG entry = %v", first)
	}
	if ci, _ := first["client-info"].(string); !strings.Contains(ci, "user=svc") {
		t.Errorf("client-info %q lacks user=svc", ci)
	}
}

// TestACLDeleteDisconnects: ACL DELUSER closes the user's connections;
// a wrong password is logged as an auth denial.
func TestACLDeleteDisconnects(t *testing.T) {
	_, addr, _ := newTestServer(t)
	admin := dialRaw(t, addr)
	if got := admin.do("ACL", "SETUSER", "bob", "on", ">pw", "+@all", "~*"); got != "+OK\r\n" {
		t.Fatal(got)
	}
	bob := dialRaw(t, addr)
	if got := bob.do("AUTH", "bob", "nope"); got != "-"+errWrongPass+"\r\n" {
		t.Fatalf("AUTH wrong = %q", got)
	}
	if got := bob.do("AUTH", "bob", "pw"); got != "+OK\r\n" {
		t.Fatalf("AUTH = %q", got)
	}
	if got := bob.do("ACL", "WHOAMI"); got != "$3\r\nbob\r\n" {
		t.Fatalf("WHOAMI = %q", got)
	}
	if got := admin.do("ACL", "DELUSER", "bob", "nobody"); got != ":1\r\n" {
		t.Fatalf("DELUSER = %q", got)
	}
	bob.expectClosed()
	if got := admin.do("ACL", "LOG", "1"); !strings.Contains(got, "auth") || !strings.Contains(got, "bob") {
		t.Errorf("ACL LOG after a wrong password: %q", got)
	}
}

// TestHelloOptionsLeftToRight: HELLO applies AUTH and SETNAME where they
// stand, as Redis does (issue 14's parity item): the first AUTH fails
// although a later one would succeed, and an earlier SETNAME stays set.
func TestHelloOptionsLeftToRight(t *testing.T) {
	_, addr, _ := newTestServer(t, func(c *Config) { c.RequirePass = "secret" })
	rc := dialRaw(t, addr)
	if got := rc.do("HELLO", "2", "AUTH", "bob", "x", "AUTH", "default", "secret"); got != "-"+errWrongPass+"\r\n" {
		t.Errorf("HELLO 2 AUTH bob x AUTH default secret = %q, want WRONGPASS", got)
	}
	if got := rc.do("HELLO", "2", "SETNAME", "early", "AUTH", "default", "wrong"); got != "-"+errWrongPass+"\r\n" {
		t.Errorf("HELLO SETNAME early AUTH wrong = %q", got)
	}
	if got := rc.do("AUTH", "secret"); got != "+OK\r\n" {
		t.Fatal(got)
	}
	if got := rc.do("CLIENT", "GETNAME"); got != "$5\r\nearly\r\n" {
		t.Errorf("name after HELLO SETNAME then failed AUTH = %q, want early", got)
	}
}

// TestACLRequirepassAndFile: requirepass is the default user's password
// (CONFIG SET changes it); ACL SAVE writes the aclfile and ACL LOAD reads
// it back, refusing a wrong file as a whole.
func TestACLRequirepassAndFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "users.acl")
	if err := os.WriteFile(file, []byte("user default on nopass ~* &* +@all\nuser ro on >ro ~* -@all +get\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s, addr, _ := newTestServer(t, func(c *Config) { c.ACLFile = file })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ro := redis.NewClient(&redis.Options{Addr: addr, Username: "ro", Password: "ro", MaxRetries: -1, DisableIdentity: true})
	defer ro.Close()
	if err := ro.Get(ctx, "k").Err(); !errors.Is(err, redis.Nil) {
		t.Fatalf("ro GET: %v", err)
	}
	admin := dialRaw(t, addr)
	if got := admin.do("CONFIG", "SET", "requirepass", "s3"); got != "+OK\r\n" {
		t.Fatal(got)
	}
	if !s.defaultUserHasPassword() {
		t.Error("defaultUserHasPassword false after CONFIG SET requirepass")
	}
	if got := dialRaw(t, addr).do("PING"); got != "-"+errNoAuth+"\r\n" {
		t.Errorf("new connection after requirepass: %q", got)
	}
	if got := admin.do("ACL", "SETUSER", "w", "on", ">w", "~w:*", "+set"); got != "+OK\r\n" {
		t.Fatal(got)
	}
	if got := admin.do("ACL", "SAVE"); got != "+OK\r\n" {
		t.Fatal(got)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	want := "user default on #" + hashPassword([]byte("s3")) + " ~* &* +@all\n" +
		"user ro on #" + hashPassword([]byte("ro")) + " ~* resetchannels -@all +get\n" +
		"user w on #" + hashPassword([]byte("w")) + " ~w:* resetchannels -@all +set\n"
	if string(data) != want {
		t.Errorf("ACL SAVE wrote\n%s\nwant\n%s", data, want)
	}
	// A wrong line: nothing changes.
	os.WriteFile(file, []byte("user ro on >x +nosuch\nuser w on\n"), 0o600)
	if got := admin.do("ACL", "LOAD"); !strings.Contains(got, "Error in applying operation '+nosuch'") {
		t.Errorf("ACL LOAD of a bad file = %q", got)
	}
	if got := admin.do("ACL", "USERS"); got != "*3\r\n$7\r\ndefault\r\n$2\r\nro\r\n$1\r\nw\r\n" {
		t.Errorf("users after a refused LOAD = %q", got)
	}
	// A good file replaces the users; ro's connections are closed.
	os.WriteFile(file, []byte("user w on >w2 ~* +@all\n"), 0o600)
	if got := admin.do("ACL", "LOAD"); got != "+OK\r\n" {
		t.Fatalf("ACL LOAD = %q", got)
	}
	if got := admin.do("ACL", "USERS"); got != "*2\r\n$7\r\ndefault\r\n$1\r\nw\r\n" {
		t.Errorf("users after LOAD = %q", got)
	}
	if s.defaultUserHasPassword() {
		t.Error("a file without a default user: default is nopass again, as in Redis")
	}
	if err := ro.Get(ctx, "k").Err(); err == nil {
		t.Error("ro still works after ACL LOAD dropped it")
	}
}

// TestACLStartupFileErrors: a wrong aclfile refuses start-up.
func TestACLStartupFileErrors(t *testing.T) {
	file := filepath.Join(t.TempDir(), "bad.acl")
	os.WriteFile(file, []byte("usr x\n"), 0o600)
	cfg := DefaultConfig()
	cfg.ACLFile = file
	if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), "should start with user keyword") {
		t.Errorf("New with a bad aclfile: %v", err)
	}
}

// TestACLOffAndChannels: as Redis, turning a user off keeps its open
// connections (new AUTHs fail); revoking a channel disconnects the user's
// subscribers to it, and channel permissions apply to SUBSCRIBE, PSUBSCRIBE
// (patterns literally) and PUBLISH.
func TestACLOffAndChannels(t *testing.T) {
	_, addr, _ := newTestServer(t)
	admin := dialRaw(t, addr)
	if got := admin.do("ACL", "SETUSER", "p", "on", ">p", "+@all", "~*", "resetchannels", "&news.*"); got != "+OK\r\n" {
		t.Fatal(got)
	}
	p := dialRaw(t, addr)
	if got := p.do("AUTH", "p", "p"); got != "+OK\r\n" {
		t.Fatal(got)
	}
	const noChan = "-NOPERM this user has no permissions to access one of the channels used as arguments\r\n"
	if got := p.do("PUBLISH", "other", "x"); got != noChan {
		t.Errorf("PUBLISH other = %q", got)
	}
	if got := p.do("PSUBSCRIBE", "news.a*"); got != noChan {
		t.Errorf("PSUBSCRIBE news.a* = %q (a pattern must equal an allowed one)", got)
	}
	if got := p.do("ACL", "SETUSER", "p", "off"); got != "+OK\r\n" {
		t.Fatal(got)
	}
	if got := p.do("PING"); got != "+PONG\r\n" {
		t.Errorf("PING after off = %q: Redis keeps the connection", got)
	}
	if got := dialRaw(t, addr).do("AUTH", "p", "p"); got != "-"+errWrongPass+"\r\n" {
		t.Errorf("AUTH as an off user = %q", got)
	}
	if got := p.do("SUBSCRIBE", "news.1"); !strings.Contains(got, "news.1") {
		t.Fatalf("SUBSCRIBE news.1 = %q", got)
	}
	if got := admin.do("ACL", "SETUSER", "p", "&sports"); got != "+OK\r\n" {
		t.Fatal(got) // a superset: the subscriber stays
	}
	if got := admin.do("PUBLISH", "news.1", "m"); got != ":1\r\n" {
		t.Errorf("PUBLISH to the subscriber = %q", got)
	}
	p.readReply()
	if got := admin.do("ACL", "SETUSER", "p", "resetchannels", "&sports"); got != "+OK\r\n" {
		t.Fatal(got)
	}
	p.expectClosed()
}

// TestACLDefaultUserRestricted: the default user's rules apply to every
// connection using it at once, and the hot path's open flag follows.
func TestACLDefaultUserRestricted(t *testing.T) {
	_, addr, _ := newTestServer(t)
	rc := dialRaw(t, addr)
	if got := rc.do("SET", "k", "v"); got != "+OK\r\n" {
		t.Fatal(got)
	}
	if got := rc.do("ACL", "SETUSER", "default", "-set"); got != "+OK\r\n" {
		t.Fatal(got)
	}
	if got := rc.do("SET", "k", "v"); got != "-NOPERM this user has no permissions to run the 'set' command\r\n" {
		t.Errorf("SET after -set = %q", got)
	}
	if got := rc.do("ACL", "SETUSER", "default", "+set"); got != "+OK\r\n" {
		t.Fatal(got)
	}
	if got := rc.do("SET", "k", "v"); got != "+OK\r\n" {
		t.Errorf("SET after +set = %q", got)
	}
}

// TestACLForwardChecksLocally: a cluster node checks its own users'
// permissions before forwarding a command to the leader.
func TestACLForwardChecksLocally(t *testing.T) {
	e := newFwdEnv(t)
	admin := dialRaw(t, e.nodeAddr)
	if got := admin.do("ACL", "SETUSER", "svc", "on", ">pw", "~rl:*", "+cl.throttle"); got != "+OK\r\n" {
		t.Fatal(got)
	}
	svc := e.client(t, e.nodeAddr, 2, func(o *redis.Options) { o.Username, o.Password = "svc", "pw" })
	if err := svc.Do(e.ctx, "CL.THROTTLE", "rl:x", "1", "1", "60").Err(); err != nil {
		t.Fatalf("CL.THROTTLE rl:x: %v", err)
	}
	if _, ok := keyOn(e.leader, 0, "rl:x"); !ok {
		t.Error("rl:x is not on the leader: not forwarded")
	}
	err := svc.Do(e.ctx, "CL.THROTTLE", "other:x", "1", "1", "60").Err()
	if err == nil || !strings.HasPrefix(err.Error(), "NOPERM") {
		t.Errorf("CL.THROTTLE other:x through the node: %v", err)
	}
	if _, ok := keyOn(e.leader, 0, "other:x"); ok {
		t.Error("other:x reached the leader")
	}
}
