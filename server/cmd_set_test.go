package server

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// Tests of the set and hash commands beyond the differential scripts
// (testdata/compat/set.txt, hash.txt): through go-redis in RESP2 and
// RESP3, the random commands' properties, cursors over big values, and
// persistence.

func sorted(ss []string) []string { slices.Sort(ss); return ss }

func numbered(prefix string, n int) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = prefix + strconv.Itoa(i)
	}
	return out
}

func TestIntegrationSets(t *testing.T) {
	itEachProtocol(t, func(t *testing.T, e *itEnv) {
		r, ctx := e.rdb, e.ctx
		if n, err := r.SAdd(ctx, "s", "b", "a", "c", "a").Result(); err != nil || n != 3 {
			t.Fatalf("SADD = %d, %v", n, err)
		}
		if got, err := r.SMembers(ctx, "s").Result(); err != nil || fmt.Sprint(sorted(got)) != "[a b c]" {
			t.Fatalf("SMEMBERS = %v, %v", got, err)
		}
		if got, err := r.SMembersMap(ctx, "s").Result(); err != nil || len(got) != 3 {
			t.Fatalf("SMEMBERS map = %v, %v", got, err)
		}
		if ok, _ := r.SIsMember(ctx, "s", "a").Result(); !ok {
			t.Fatal("SISMEMBER a")
		}
		if got, _ := r.SMIsMember(ctx, "s", "a", "z").Result(); fmt.Sprint(got) != "[true false]" {
			t.Fatalf("SMISMEMBER = %v", got)
		}
		if n, _ := r.SCard(ctx, "s").Result(); n != 3 {
			t.Fatalf("SCARD = %d", n)
		}
		// Intsets list in ascending order.
		r.SAdd(ctx, "ints", 30, -1, 20, 5)
		if got, _ := r.SMembers(ctx, "ints").Result(); fmt.Sprint(got) != "[-1 5 20 30]" {
			t.Fatalf("SMEMBERS intset = %v", got)
		}
		if enc, _ := r.ObjectEncoding(ctx, "ints").Result(); enc != "intset" {
			t.Fatalf("encoding %s", enc)
		}
		if enc, _ := r.ObjectEncoding(ctx, "s").Result(); enc != "listpack" {
			t.Fatalf("encoding %s", enc)
		}
		r.SAdd(ctx, "t", "c", "d")
		if got, _ := r.SInter(ctx, "s", "t").Result(); fmt.Sprint(got) != "[c]" {
			t.Fatalf("SINTER = %v", got)
		}
		if got, _ := r.SUnion(ctx, "s", "t").Result(); fmt.Sprint(sorted(got)) != "[a b c d]" {
			t.Fatalf("SUNION = %v", got)
		}
		if got, _ := r.SDiff(ctx, "s", "t").Result(); fmt.Sprint(sorted(got)) != "[a b]" {
			t.Fatalf("SDIFF = %v", got)
		}
		if n, _ := r.SUnionStore(ctx, "u", "s", "t", "ints").Result(); n != 8 {
			t.Fatalf("SUNIONSTORE = %d", n)
		}
		if n, _ := r.SInterCard(ctx, 0, "u").Result(); n != 8 {
			t.Fatalf("SINTERCARD = %d", n)
		}
		if n, _ := r.SInterCard(ctx, 3, "u", "ints").Result(); n != 3 {
			t.Fatalf("SINTERCARD = %d", n)
		}
		if ok, _ := r.SMove(ctx, "s", "t", "a").Result(); !ok {
			t.Fatal("SMOVE")
		}
		if got, _ := r.SPopN(ctx, "ints", 10).Result(); fmt.Sprint(got) != "[-1 5 20 30]" {
			t.Fatalf("SPOP whole = %v", got)
		}
		if n, _ := r.Exists(ctx, "ints").Result(); n != 0 {
			t.Fatal("SPOP of the whole set left the key")
		}
		itWantErr(t, "SADD on a string", func() error { r.Set(ctx, "str", "x", 0); return r.SAdd(ctx, "str", "m").Err() }(), errWrongType)
		itWantErr(t, "SINTERCARD 0", r.Do(ctx, "SINTERCARD", "0", "s").Err(), "ERR numkeys should be greater than 0")
	})
}

func TestIntegrationHashes(t *testing.T) {
	itEachProtocol(t, func(t *testing.T, e *itEnv) {
		r, ctx := e.rdb, e.ctx
		if n, err := r.HSet(ctx, "h", "a", "1", "b", "2").Result(); err != nil || n != 2 {
			t.Fatalf("HSET = %d, %v", n, err)
		}
		if got, err := r.HGetAll(ctx, "h").Result(); err != nil || fmt.Sprint(got) != "map[a:1 b:2]" {
			t.Fatalf("HGETALL = %v, %v", got, err)
		}
		raw, err := r.Do(ctx, "HGETALL", "h").Result()
		if err != nil {
			t.Fatal(err)
		}
		if _, isMap := raw.(map[any]any); isMap != (e.proto == 3) {
			t.Fatalf("HGETALL in RESP%d is a %T", e.proto, raw)
		}
		if ok, _ := r.HSetNX(ctx, "h", "a", "x").Result(); ok {
			t.Fatal("HSETNX over a field")
		}
		if got, _ := r.HMGet(ctx, "h", "a", "zz").Result(); fmt.Sprint(got) != "[1 <nil>]" {
			t.Fatalf("HMGET = %v", got)
		}
		if n, _ := r.HIncrBy(ctx, "h", "a", 41).Result(); n != 42 {
			t.Fatalf("HINCRBY = %d", n)
		}
		if f, _ := r.HIncrByFloat(ctx, "h", "f", 0.1).Result(); f != 0.1 {
			t.Fatalf("HINCRBYFLOAT = %v", f)
		}
		if got, _ := r.HKeys(ctx, "h").Result(); fmt.Sprint(got) != "[a b f]" {
			t.Fatalf("HKEYS = %v", got)
		}
		if got, _ := r.HVals(ctx, "h").Result(); fmt.Sprint(got) != "[42 2 0.1]" {
			t.Fatalf("HVALS = %v", got)
		}
		if n, _ := r.HStrLen(ctx, "h", "a").Result(); n != 2 {
			t.Fatalf("HSTRLEN = %d", n)
		}
		kv, err := r.HRandFieldWithValues(ctx, "h", 10).Result()
		if err != nil || len(kv) != 3 || kv[0].Key != "a" || kv[0].Value != "42" {
			t.Fatalf("HRANDFIELD WITHVALUES = %v, %v", kv, err)
		}
		kv, err = r.HRandFieldWithValues(ctx, "h", -5).Result()
		if err != nil || len(kv) != 5 {
			t.Fatalf("HRANDFIELD -5 WITHVALUES = %v, %v", kv, err)
		}
		if n, _ := r.HDel(ctx, "h", "a", "b", "f").Result(); n != 3 {
			t.Fatalf("HDEL = %d", n)
		}
		if n, _ := r.Exists(ctx, "h").Result(); n != 0 {
			t.Fatal("emptied hash still exists")
		}
		itWantErr(t, "HINCRBY on a string value", func() error {
			r.HSet(ctx, "h", "s", "abc")
			return r.HIncrBy(ctx, "h", "s", 1).Err()
		}(), "ERR hash value is not an integer")
	})
}

// TestRandomSetAndHashCommands checks the properties the compat scripts
// cannot: distinct picks, picks from the value, every member reachable,
// and that SPOP removes what it returns.
func TestRandomSetAndHashCommands(t *testing.T) {
	_, addr, _ := newTestServer(t)
	r := itGoRedis(t, addr, 3)
	ctx := itContext(t)
	for _, c := range []struct {
		name    string
		members []any
	}{{"intset", []any{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}}, {"listpack", numbered("m", 10)}, {"hashtable", numbered("m", 300)}} {
		t.Run(c.name, func(t *testing.T) {
			key := "rand-" + c.name
			r.Del(ctx, key)
			r.SAdd(ctx, key, c.members...)
			if enc, _ := r.ObjectEncoding(ctx, key).Result(); enc != c.name {
				t.Fatalf("encoding %s", enc)
			}
			all := map[string]bool{}
			for _, m := range c.members {
				all[fmt.Sprint(m)] = true
			}
			seen := map[string]int{}
			for range 200 {
				got, err := r.SRandMemberN(ctx, key, 4).Result()
				if err != nil || len(got) != 4 {
					t.Fatalf("SRANDMEMBER 4 = %v, %v", got, err)
				}
				if len(sorted(slices.Clone(got))) != len(slices.Compact(sorted(got))) {
					t.Fatalf("SRANDMEMBER 4 repeats: %v", got)
				}
				for _, m := range got {
					if !all[m] {
						t.Fatalf("SRANDMEMBER gave %q, not a member", m)
					}
					seen[m]++
				}
				m, _ := r.SRandMember(ctx, key).Result()
				seen[m]++
			}
			if len(c.members) <= 10 && len(seen) != len(c.members) {
				t.Fatalf("SRANDMEMBER reached %d of %d members", len(seen), len(c.members))
			}
			got, _ := r.Do(ctx, "SRANDMEMBER", key, "-50").StringSlice()
			if len(got) != 50 {
				t.Fatalf("SRANDMEMBER -50 gave %d", len(got))
			}
			for _, m := range got {
				if !all[m] {
					t.Fatalf("SRANDMEMBER -50 gave %q", m)
				}
			}
			// SPOP until empty: every member exactly once.
			popped := map[string]bool{}
			for r.Exists(ctx, key).Val() == 1 {
				got, err := r.SPopN(ctx, key, 3).Result()
				if err != nil || len(got) == 0 {
					t.Fatalf("SPOP 3 = %v, %v", got, err)
				}
				for _, m := range got {
					if popped[m] || !all[m] {
						t.Fatalf("SPOP gave %q (popped before: %v)", m, popped[m])
					}
					popped[m] = true
					if r.SIsMember(ctx, key, m).Val() {
						t.Fatalf("SPOP left %q in the set", m)
					}
				}
				if m, err := r.SPop(ctx, key).Result(); err == nil {
					if popped[m] || !all[m] {
						t.Fatalf("SPOP gave %q", m)
					}
					popped[m] = true
				}
			}
			if len(popped) != len(all) {
				t.Fatalf("popped %d of %d", len(popped), len(all))
			}
		})
	}
	for _, n := range []int{5, 600} { // listpack and hashtable
		key := "hrand" + strconv.Itoa(n)
		args := []any{}
		for i := range n {
			args = append(args, "f"+strconv.Itoa(i), "v"+strconv.Itoa(i))
		}
		r.HSet(ctx, key, args...)
		seen := map[string]bool{}
		for range 100 {
			kv, err := r.HRandFieldWithValues(ctx, key, 3).Result()
			if err != nil || len(kv) != 3 {
				t.Fatalf("HRANDFIELD 3 WITHVALUES = %v, %v", kv, err)
			}
			for _, p := range kv {
				if "v"+strings.TrimPrefix(p.Key, "f") != p.Value {
					t.Fatalf("pair %v", p)
				}
				seen[p.Key] = true
			}
			if kv[0].Key == kv[1].Key || kv[1].Key == kv[2].Key || kv[0].Key == kv[2].Key {
				t.Fatalf("HRANDFIELD 3 repeats: %v", kv)
			}
		}
		if n == 5 && len(seen) != 5 {
			t.Fatalf("HRANDFIELD reached %d of 5 fields", len(seen))
		}
	}
}

// TestScanBigSetAndHash walks hashtable values with SSCAN/HSCAN cursors.
func TestScanBigSetAndHash(t *testing.T) {
	_, addr, _ := newTestServer(t)
	r := itGoRedis(t, addr, 2)
	ctx := itContext(t)
	r.SAdd(ctx, "big", numbered("m", 1000)...)
	r.HSet(ctx, "bigh", numbered("f", 1200)...) // 600 fields
	seen := map[string]int{}
	var cursor uint64
	calls := 0
	for {
		keys, next, err := r.SScan(ctx, "big", cursor, "m1*", 50).Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range keys {
			seen[k]++
		}
		calls++
		if cursor = next; cursor == 0 {
			break
		}
	}
	if calls < 10 || len(seen) != 111 { // m1, m10-m19, m100-m199
		t.Fatalf("%d calls, %d members", calls, len(seen))
	}
	for k, n := range seen {
		if n != 1 {
			t.Fatalf("%s returned %d times", k, n)
		}
	}
	fields := map[string]string{}
	cursor = 0
	for {
		kv, next, err := r.HScan(ctx, "bigh", cursor, "", 100).Result()
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < len(kv); i += 2 {
			fields[kv[i]] = kv[i+1]
		}
		if cursor = next; cursor == 0 {
			break
		}
	}
	if len(fields) != 600 || fields["f0"] != "f1" {
		t.Fatalf("HSCAN saw %d fields", len(fields))
	}
}

// TestSetsAndHashesSurviveRestart: sets in every encoding and hashes come
// back from the append-only log (ops as logged, SPOP's removals, STORE
// values) and from a snapshot.
func TestSetsAndHashesSurviveRestart(t *testing.T) {
	for _, aof := range []bool{true, false} {
		name := map[bool]string{true: "appendonly", false: "snapshot"}[aof]
		t.Run(name, func(t *testing.T) {
			r := newRestartable(t, func(c *Config) { c.Persist.AppendOnly = aof })
			do := func(args ...string) string { t.Helper(); return r.rc.do(args...) }
			do("SADD", "ints", "5", "-70000", "1")
			do("SADD", "pack", "b", "a", "1")
			big := []string{"SADD", "big"}
			for i := range 200 {
				big = append(big, "m"+strconv.Itoa(i))
			}
			do(big...)
			do("SREM", "big", "m7")
			popped := do("SPOP", "pack")
			do("SPOP", "big", "20")
			do("SMOVE", "ints", "moved", "5")
			do("SUNIONSTORE", "union", "ints", "moved")
			do("SINTERSTORE", "inter", "big", "big")
			do("SADD", "gone", "x")
			do("SPOP", "gone", "5")
			do("HSET", "h", "a", "1", "b", "2")
			do("HINCRBYFLOAT", "h", "f", "0.1")
			do("HINCRBYFLOAT", "h", "f", "0.2")
			do("HINCRBY", "h", "a", "9")
			do("HDEL", "h", "b")
			do("HSETNX", "h", "n", "v")
			hbig := []string{"HSET", "hbig"}
			for i := range 600 {
				hbig = append(hbig, "f"+strconv.Itoa(i), "v")
			}
			do(hbig...)

			keys := []string{"ints", "pack", "big", "moved", "union", "inter", "gone", "h", "hbig"}
			state := func() string {
				var b strings.Builder
				for _, k := range keys {
					fmt.Fprintf(&b, "%s %q %q ", k, do("TYPE", k), do("OBJECT", "ENCODING", k))
					switch do("TYPE", k) {
					case "+set\r\n":
						fmt.Fprintf(&b, "%q %q\n", do("SCARD", k), do("SINTERCARD", "1", k))
						if do("OBJECT", "ENCODING", k) != "$9\r\nhashtable\r\n" {
							fmt.Fprintf(&b, "%q\n", do("SMEMBERS", k)) // ordered
						}
					case "+hash\r\n":
						fmt.Fprintf(&b, "%q\n", do("HGETALL", k))
					}
				}
				return b.String()
			}
			before := state()
			if !strings.Contains(before, `"$9\r\nhashtable\r\n"`) || !strings.Contains(before, `"$6\r\nintset\r\n"`) || !strings.Contains(before, `"$8\r\nlistpack\r\n"`) {
				t.Fatalf("encodings not all covered:\n%s", before)
			}
			bigMembers := sorted(strings.Split(do("SMEMBERS", "big"), "\r\n"))
			if !aof {
				r.expect("+OK\r\n", "SAVE")
			}
			r.restart()
			if after := state(); after != before {
				t.Fatalf("after restart:\n%s\nbefore:\n%s", after, before)
			}
			if got := sorted(strings.Split(do("SMEMBERS", "big"), "\r\n")); !slices.Equal(got, bigMembers) {
				t.Fatal("big set members differ after restart")
			}
			if m := strings.Split(popped, "\r\n")[1]; do("SISMEMBER", "pack", m) != ":0\r\n" {
				t.Fatalf("popped member %q is back", m)
			}
			r.expect("$3\r\n0.3\r\n", "HGET", "h", "f")
		})
	}
}
