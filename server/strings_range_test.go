package server

import (
	"bytes"
	"fmt"
	"hash/crc32"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/turnstile/turnstile/clock"
	"github.com/turnstile/turnstile/coll"
	"github.com/turnstile/turnstile/persistence"
	"github.com/turnstile/turnstile/shards"
)

// logBytes is how many bytes the append-only log of s holds (written).
func logBytes(s *Server) int64 { return logSize(s.aofLog()) }

// TestAppendLogsOnlyTheChange: APPEND and SETRANGE on a big value log
// bytes in proportion to what they change, not to the value (before,
// each logged the whole value: 20 one-byte APPENDs to 50 MB wrote 1.1 GB).
func TestAppendLogsOnlyTheChange(t *testing.T) {
	r := newRestartable(t, func(c *Config) { c.Persist.AppendOnly = true })
	const size = 1 << 20
	r.expect("+OK\r\n", "SET", "big", strings.Repeat("v", size))
	r.expect("+OK\r\n", "SET", "n", "12345")
	before := logBytes(r.srv)
	const ops = 20
	for i := 0; i < ops; i++ {
		r.expect(fmt.Sprintf(":%d\r\n", size+i+1), "APPEND", "big", "x")
		r.expect(fmt.Sprintf(":%d\r\n", size+i+1), "SETRANGE", "big", fmt.Sprint(size/2+i), "y")
		r.expect(fmt.Sprintf(":%d\r\n", 5+i+1), "APPEND", "n", "7")
	}
	r.expect(":0\r\n", "EXISTS", "fresh")
	r.expect(fmt.Sprintf(":%d\r\n", size+1), "SETRANGE", "fresh", fmt.Sprint(size), "z") // zeros before it
	r.expect(fmt.Sprintf(":%d\r\n", size+ops), "APPEND", "big", "")
	grown := logBytes(r.srv) - before
	// A record is about 30 bytes here; the value is 1 MiB.
	if limit := int64(64 * (3*ops + 2)); grown > limit {
		t.Fatalf("%d operations of one byte logged %d bytes (limit %d)", 3*ops+2, grown, limit)
	}
	want := []byte(strings.Repeat("v", size) + strings.Repeat("x", ops))
	for i := 0; i < ops; i++ {
		want[size/2+i] = 'y'
	}
	r.srv.Close()
	r.waitStopped()
	r.start()
	r.expect(fmt.Sprintf("$%d\r\n%s\r\n", len(want), want), "GET", "big")
	r.expect("$25\r\n12345"+strings.Repeat("7", ops)+"\r\n", "GET", "n")
	r.expect(fmt.Sprintf("$%d\r\n%s\r\n", size+1, strings.Repeat("\x00", size)+"z"), "GET", "fresh")
}

// rangeScript is a sequence of string writes that take every path of
// APPEND and SETRANGE: appends to small and big (own record) values and to
// an integer, SETRANGE inside, at and past the end (zero padding), on a
// new key with padding, a range on a key replaced or deleted in between,
// keys with TTLs, a transaction, empty appends, and a key that expired
// while still stored (its next write starts a new value).
var rangeScript = [][]string{
	{"SET", "s", "hello"},
	{"APPEND", "s", " world"},
	{"SETRANGE", "s", "20", "X"},
	{"SETRANGE", "s", "0", "J"},
	{"SETRANGE", "s", "21", "end"},
	{"APPEND", "s", ""},
	{"SET", "i", "123"},
	{"APPEND", "i", "4"},
	{"SET", "j", "-7"},
	{"SETRANGE", "j", "1", "9"},
	{"SET", "ttl", "abc", "PX", "100000"},
	{"APPEND", "ttl", "d"},
	{"SETRANGE", "ttl", "10", "e"},
	{"SETRANGE", "pad", "5", "z"},
	{"SET", "pad", "q"},
	{"APPEND", "pad", "r"},
	{"SET", "k", "aaaaaaaaaa"},
	{"SETRANGE", "k", "2", "bb"},
	{"SET", "k", "cc"},
	{"SETRANGE", "k", "5", "d"},
	{"DEL", "k"},
	{"APPEND", "k", "new"},
	{"SET", "big", strings.Repeat("b", 3000)},
	{"APPEND", "big", strings.Repeat("c", 2000)},
	{"APPEND", "big", "d"},
	{"SETRANGE", "big", "4000", "e"},
	{"SETRANGE", "big", "6000", "f"},
	{"APPEND", "big", strings.Repeat("g", 5000)},
	{"MULTI"},
	{"APPEND", "m", "1"},
	{"APPEND", "m", "2"},
	{"SETRANGE", "m", "4", "3"},
	{"EXEC"},
	{"SET", "short", "xyz", "PX", "1000"},
	{"SELECT", "2"},
	{"APPEND", "db2", "two"},
	{"SETRANGE", "db2", "1", "W"},
	{"SELECT", "0"},
}

// rangeKeys are the keys rangeScript writes, with their databases.
var rangeKeys = []struct {
	db  int
	key string
}{{0, "s"}, {0, "i"}, {0, "j"}, {0, "ttl"}, {0, "pad"}, {0, "k"}, {0, "big"}, {0, "m"}, {0, "short"}, {2, "db2"}}

// TestRangeEffectsReplay: a log of range effects replays into exactly
// the values (and TTLs) the server had.
func TestRangeEffectsReplay(t *testing.T) {
	r := newRestartable(t, func(c *Config) { c.Persist.AppendOnly = true })
	for _, cmd := range rangeScript {
		if got := r.rc.do(cmd...); strings.HasPrefix(got, "-") {
			t.Fatalf("%v: %q", cmd, got)
		}
	}
	want := keyStates(r)
	if want["0 s"] != "$24\r\nJello world\x00\x00\x00\x00\x00\x00\x00\x00\x00Xend\r\n" || want["0 k"] != "$3\r\nnew\r\n" ||
		want["0 m"] != "$5\r\n12\x00\x003\r\n" || want["0 pad"] != "$2\r\nqr\r\n" || want["0 i"] != "$4\r\n1234\r\n" {
		t.Fatalf("the script did not leave the expected values: %q", want)
	}
	r.srv.Close()
	r.waitStopped()
	r.start()
	if got := keyStates(r); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("after replay:\n%q\nwant\n%q", got, want)
	}
}

// keyStates returns, for each of rangeKeys, "db key" -> GET and PTTL
// replies.
func keyStates(r *restartable) map[string]string {
	out := map[string]string{}
	for _, k := range rangeKeys {
		r.rc.do("SELECT", fmt.Sprint(k.db))
		out[fmt.Sprintf("%d %s", k.db, k.key)] = r.rc.do("GET", k.key)
		out[fmt.Sprintf("%d %s ttl", k.db, k.key)] = r.rc.do("PTTL", k.key)
	}
	r.rc.do("SELECT", "0")
	return out
}

// effectTap is a Durability that keeps every unit of effects, encoded as a
// cluster's entries carry them.
type effectTap struct {
	mu    sync.Mutex
	units [][]byte
}

func (d *effectTap) Append(effects []persistence.Effect) int64 {
	var b []byte
	for i := range effects {
		b = persistence.AppendEffect(b, &effects[i])
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.units = append(d.units, b)
	return int64(len(d.units))
}

func (d *effectTap) Wait(int64) error { return nil }

func (d *effectTap) Tail() int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return int64(len(d.units))
}

// TestRangeEffectsApplyLikeTheLeader: the effects a server produces for
// rangeScript, decoded from their records and applied with ApplyEffect (as
// a cluster's followers and replay do), give a keyspace identical to the
// server's own; the big value's changes travel as ranges, not values.
func TestRangeEffectsApplyLikeTheLeader(t *testing.T) {
	tap := &effectTap{}
	s, addr, _ := newTestServer(t, func(c *Config) { c.Durability = tap })
	rc := dialRaw(t, addr)
	for _, cmd := range rangeScript {
		if got := rc.do(cmd...); strings.HasPrefix(got, "-") {
			t.Fatalf("%v: %q", cmd, got)
		}
	}
	cfg := quietConfig()
	cfg.Clock = clock.NewManual(testEpoch) // the leader's test clock: the same keys are live
	follower, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ranges, bigSets := 0, 0
	tap.mu.Lock() // the socket's ordering is not seen by the race detector
	units := slices.Clone(tap.units)
	tap.mu.Unlock()
	for _, u := range units {
		err := persistence.DecodeEffects(u, func(e *persistence.Effect) error {
			if e.Op == persistence.OpRange {
				ranges++
			}
			if e.Op == persistence.OpSet && string(e.Key) == "big" {
				bigSets++
			}
			return follower.ApplyEffect(*e)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if ranges < 15 || bigSets != 1 {
		t.Fatalf("%d range effects and %d whole values of big, want ≥ 15 and 1", ranges, bigSets)
	}
	for db := 0; db < 3; db++ {
		if got, want := dumpKeys(t, follower, db), dumpKeys(t, s, db); got != want {
			t.Fatalf("database %d on the follower:\n%s\nleader:\n%s", db, got, want)
		}
	}
}

// dumpKeys lists database db's keys with their entries, sorted.
func dumpKeys(t *testing.T, s *Server, db int) string {
	var lines []string
	err := s.dump(func(d int, key []byte, e shards.Entry) error {
		if d == db {
			str := fmt.Sprintf("%q", e.Str)
			if len(e.Str) > 64 { // a digest, not the whole value
				str = fmt.Sprintf("%d bytes, crc32 %08x", len(e.Str), crc32.ChecksumIEEE(e.Str))
			}
			lines = append(lines, fmt.Sprintf("%q kind=%d int=%d str=%s exp=%d", key, e.Kind, e.Int, str, e.Exp))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

// TestApplyRange: ApplyEffect's range on every kind of current value, and
// its refusals (no panic, no change).
func TestApplyRange(t *testing.T) {
	s, err := New(quietConfig())
	if err != nil {
		t.Fatal(err)
	}
	apply := func(key string, off, n int64, data string) error {
		return s.ApplyEffect(persistence.Effect{Op: persistence.OpRange, Key: []byte(key), Off: off, Len: n,
			Entry: shards.Entry{Kind: shards.KindBytes, Str: []byte(data)}})
	}
	get := func(key string) shards.Entry { // a string value's bytes in Str, whatever its kind
		e, _, _ := s.dbs[0].Find([]byte(key))
		if e.IsString() {
			e.Str = e.AppendString(nil)
		}
		return e
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(apply("absent", 3, 5, "ab")) // an absent key is an empty string
	if e := get("absent"); string(e.Str) != "\x00\x00\x00ab" || e.Exp != 0 {
		t.Fatalf("absent: %+v", e)
	}
	must(apply("absent", 3, 5, "ab")) // twice: the same value
	if e := get("absent"); string(e.Str) != "\x00\x00\x00ab" {
		t.Fatalf("applied twice: %q", e.Str)
	}
	must(s.ApplyEffect(persistence.Effect{Op: persistence.OpSet, Key: []byte("int"), Entry: shards.IntEntry(-42, 99)}))
	must(apply("int", 3, 4, "7"))
	if e := get("int"); string(e.Str) != "-427" || e.Exp != 99 {
		t.Fatalf("int: %+v", e)
	}
	must(apply("int", 1, 2, "5")) // cut to the new length
	if e := get("int"); string(e.Str) != "-5" || e.Exp != 99 {
		t.Fatalf("cut: %+v", e)
	}
	must(s.ApplyEffect(persistence.Effect{Op: persistence.OpSet, Key: []byte("big"), Entry: shards.BytesEntry(bytes.Repeat([]byte("a"), 5000), 7)}))
	must(apply("big", 5000, 5003, "xyz"))
	if e := get("big"); len(e.Str) != 5003 || string(e.Str[4998:]) != "aaxyz" || e.Exp != 7 {
		t.Fatalf("big: %d bytes, tail %q, exp %d", len(e.Str), e.Str[4990:], e.Exp)
	}
	must(s.ApplyEffect(persistence.Effect{Op: persistence.OpField, Key: []byte("h"), Field: coll.OpHSet, Args: [][]byte{[]byte("f"), []byte("v")}}))
	for name, err := range map[string]error{
		"hash":        apply("h", 0, 1, "x"),
		"negative":    apply("x", -1, 1, "x"),
		"past length": apply("x", 1, 1, "x"),
		"too long":    apply("x", 0, persistence.MaxPayload+1, ""),
	} {
		if err == nil {
			t.Errorf("%s: applied", name)
		}
	}
	if _, _, found := s.dbs[0].Find([]byte("x")); found {
		t.Fatal("a refused range created a key")
	}
}

// TestAppendGrowsBigValueInPlace: APPENDs to a big value do not copy it
// each time (before, each of these 100 small APPENDs to 1 MiB allocated
// and copied 2 MiB): the value grows in place, with room to spare.
func TestAppendGrowsBigValueInPlace(t *testing.T) {
	s, c := newPathClient(t)
	feedBig(t, s, c, []byte(encodeCommand("SET", "big", strings.Repeat("v", 1<<20))))
	add := []byte(encodeCommand("APPEND", "big", strings.Repeat("a", 100)))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := 0; i < 100; i++ {
		feed(t, s, c, add)
	}
	runtime.ReadMemStats(&after)
	if n := after.TotalAlloc - before.TotalAlloc; n > 16<<20 {
		t.Fatalf("100 APPENDs of 100 bytes to 1 MiB allocated %d bytes", n)
	}
	e, _, _ := s.dbs[0].Find([]byte("big"))
	if len(e.Str) != 1<<20+100*100 || string(e.Str[len(e.Str)-3:]) != "aaa" {
		t.Fatalf("big is %d bytes", len(e.Str))
	}
}
