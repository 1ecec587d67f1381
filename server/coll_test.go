package server

import (
	"strings"
	"testing"
	"time"

	"github.com/turnstile/turnstile/coll"
	"github.com/turnstile/turnstile/command"
	"github.com/turnstile/turnstile/shards"
)

// Tests of the collection plumbing (coll.go) through two test-only
// commands, so that they do not depend on any family's handlers:
// TEST.HSET key field value ... and TEST.HDUMP key (fields in order).
func collTestCommands() []*Command {
	return []*Command{
		{Name: "test.hset", Arity: -4, Flags: command.Write | command.AddsKeys, FirstKey: 1, LastKey: 1, Step: 1,
			Handler: func(x *Ctx) {
				if _, found, ok := x.readHash(x.args[1]); !ok || (!found && len(x.args) < 4) {
					return
				}
				if n, ok := x.change(x.args[1], coll.OpHSet, x.args[2:]); ok {
					x.w.Int(n)
				}
			}},
		{Name: "test.hdel", Arity: -3, Flags: command.Write, FirstKey: 1, LastKey: 1, Step: 1,
			Handler: func(x *Ctx) {
				_, found, ok := x.readHash(x.args[1])
				if !ok {
					return
				}
				if !found {
					x.w.Int(0)
					return
				}
				if n, ok := x.change(x.args[1], coll.OpHDel, x.args[2:]); ok {
					x.w.Int(n)
				}
			}},
		{Name: "test.hdump", Arity: 2, Flags: command.Readonly, FirstKey: 1, LastKey: 1, Step: 1,
			Handler: func(x *Ctx) {
				h, found, ok := x.readHash(x.args[1])
				if !ok {
					return
				}
				var b strings.Builder
				if found {
					h.Each(func(f, v []byte) bool {
						b.WriteString(string(f) + "=" + string(v) + ";")
						return true
					})
				}
				x.w.BulkString(b.String())
			}},
	}
}

func withCollTest(mod func(*Config)) func(*Config) {
	return func(c *Config) {
		c.extraCommands = collTestCommands()
		if mod != nil {
			mod(c)
		}
	}
}

func TestCollectionWrongTypeAndGenericCommands(t *testing.T) {
	_, addr, _ := newTestServer(t, withCollTest(nil))
	rc := dialRaw(t, addr)
	for _, c := range []struct {
		want string
		args []string
	}{
		{"+OK\r\n", []string{"SET", "s", "x"}},
		{"-" + errWrongType + "\r\n", []string{"TEST.HSET", "s", "f", "v"}},
		{":2\r\n", []string{"TEST.HSET", "h", "a", "1", "b", "2"}},
		{"-" + errWrongType + "\r\n", []string{"GET", "h"}},
		{"-" + errWrongType + "\r\n", []string{"INCR", "h"}},
		{"-" + errWrongType + "\r\n", []string{"CL.THROTTLE", "h", "1", "1", "60"}},
		{"+hash\r\n", []string{"TYPE", "h"}},
		{":1\r\n", []string{"COPY", "h", "h2"}},
		{":1\r\n", []string{"TEST.HSET", "h2", "c", "3"}},
		{"$8\r\na=1;b=2;\r\n", []string{"TEST.HDUMP", "h"}}, // the copy is deep
		{"+OK\r\n", []string{"RENAME", "h2", "h3"}},
		{"$12\r\na=1;b=2;c=3;\r\n", []string{"TEST.HDUMP", "h3"}},
		{":2\r\n", []string{"TEST.HDEL", "h3", "a", "b"}},
		{":1\r\n", []string{"TEST.HDEL", "h3", "c", "zz"}},
		{":0\r\n", []string{"EXISTS", "h3"}}, // emptied: deleted
		{":1\r\n", []string{"EXPIRE", "h", "100"}},
		{":100\r\n", []string{"TTL", "h"}},
		{":0\r\n", []string{"TEST.HSET", "h", "a", "changed"}},
		{":100\r\n", []string{"TTL", "h"}}, // a field change keeps the expiry
		{":1\r\n", []string{"PERSIST", "h"}},
		{":-1\r\n", []string{"TTL", "h"}},
	} {
		if got := rc.do(c.args...); got != c.want {
			t.Fatalf("%v: got %q, want %q", c.args, got, c.want)
		}
	}
}

// TestCollectionsSurviveRestart: hashes come back from the append-only
// log (field effects, expiry effects, whole values from RENAME/COPY) and
// from a snapshot.
func TestCollectionsSurviveRestart(t *testing.T) {
	for _, aof := range []bool{true, false} {
		name := map[bool]string{true: "appendonly", false: "snapshot"}[aof]
		t.Run(name, func(t *testing.T) {
			r := newRestartable(t, withCollTest(func(c *Config) { c.Persist.AppendOnly = aof }))
			r.expect(":3\r\n", "TEST.HSET", "h", "a", "1", "b", "2", "c", "3")
			r.expect(":1\r\n", "TEST.HDEL", "h", "b")
			r.expect(":0\r\n", "TEST.HSET", "h", "a", "one")
			r.expect(":1\r\n", "PEXPIRE", "h", "60000")
			r.expect(":1\r\n", "COPY", "h", "copy")
			r.expect(":1\r\n", "TEST.HSET", "gone", "x", "1")
			r.expect(":1\r\n", "TEST.HDEL", "gone", "x")
			// A key that expires unlogged, then is created again: replay must
			// not mix the old fields into the new value.
			r.expect(":1\r\n", "TEST.HSET", "re", "old", "1")
			r.expect(":1\r\n", "PEXPIRE", "re", "1000")
			r.clk.Advance(2 * time.Second)
			r.expect(":1\r\n", "TEST.HSET", "re", "new", "2")
			big := []string{"TEST.HSET", "big"}
			for i := 0; i < 200; i++ {
				big = append(big, "f"+itoa(int64(i)), strings.Repeat("v", i))
			}
			r.expect(":200\r\n", big...)
			if !aof {
				r.expect("+OK\r\n", "SAVE")
			}
			r.restart()
			r.expect("$10\r\na=one;c=3;\r\n", "TEST.HDUMP", "h")
			r.expect(":58000\r\n", "PTTL", "h")
			r.expect("$10\r\na=one;c=3;\r\n", "TEST.HDUMP", "copy")
			r.expect(":0\r\n", "EXISTS", "gone")
			r.expect("$6\r\nnew=2;\r\n", "TEST.HDUMP", "re")
			r.expect(":-1\r\n", "PTTL", "re")
			r.expect("+hash\r\n", "TYPE", "big")
			r.expect(":0\r\n", "TEST.HSET", "big", "f199", strings.Repeat("v", 199))
		})
	}
}

// TestCollectionChangeTouchesWatchers: a field change by another client
// aborts an EXEC that watched the key; an op that changes nothing does not.
func TestCollectionChangeTouchesWatchers(t *testing.T) {
	_, addr, _ := newTestServer(t, withCollTest(nil))
	a, b := dialRaw(t, addr), dialRaw(t, addr)
	b.do("TEST.HSET", "h", "f", "1")
	for _, c := range []struct {
		other []string
		want  string
	}{
		{[]string{"TEST.HDEL", "h", "nosuchfield"}, "*1\r\n+PONG\r\n"}, // no change: EXEC runs
		{[]string{"TEST.HSET", "h", "f", "2"}, "*-1\r\n"},              // a change: EXEC aborts
	} {
		a.do("WATCH", "h")
		b.do(c.other...)
		a.do("MULTI")
		a.do("PING")
		if got := a.do("EXEC"); got != c.want {
			t.Fatalf("after %v: EXEC = %q, want %q", c.other, got, c.want)
		}
	}
}

// TestSnapshotDuringCollectionWrites: a dump holds every collection as it
// was at the dump's instant, even a value that a client changes after the
// instant but before the dump reaches it (copy on write).
func TestSnapshotDuringCollectionWrites(t *testing.T) {
	s, addr, _ := newTestServer(t, withCollTest(nil))
	rc := dialRaw(t, addr)
	const n = 50
	for i := 0; i < n; i++ {
		rc.do("TEST.HSET", "h"+itoa(int64(i)), "before", "1")
	}
	seen := map[string]string{}
	err := s.dump(func(db int, key []byte, e shards.Entry) error {
		if len(seen) == 0 { // the dump's instant has passed: change everything
			for i := 0; i < n; i++ {
				rc.do("TEST.HSET", "h"+itoa(int64(i)), "after", "2")
			}
		}
		var b strings.Builder
		e.Obj.(*coll.Hash).Each(func(f, v []byte) bool {
			b.WriteString(string(f) + "=" + string(v) + ";")
			return true
		})
		seen[string(key)] = b.String()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != n {
		t.Fatalf("dump saw %d keys, want %d", len(seen), n)
	}
	for k, v := range seen {
		if v != "before=1;" {
			t.Fatalf("dump saw %s = %q, want the value at its instant", k, v)
		}
	}
	if got := rc.do("TEST.HDUMP", "h7"); got != "$17\r\nbefore=1;after=2;\r\n" {
		t.Fatalf("live value after the dump: %q", got)
	}
}
