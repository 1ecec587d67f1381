package server

import (
	"bytes"
	"cmp"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/turnstile/turnstile/persistence"
	"github.com/turnstile/turnstile/script"
)

// nativeCase drives the differential test of one native script: where its
// Lua text is, how to make random KEYS and ARGV for it, and which commands
// show the state it leaves on a key.
type nativeCase struct {
	file    string                                               // under libtest/testdata
	gen     func(r *rand.Rand, key string) (keys, args []string) // one call's KEYS and ARGV
	inspect []string                                             // commands run on each key afterwards, "%s" for the key
	// perturb, when set, makes a command run now and then on a random key
	// of both servers (replies compared): state the script must cope with
	// that it would not leave itself (a value that is no number, a TTL
	// removed, a counter near the int64 limit, ...).
	perturb func(r *rand.Rand, key string) []string
	// perturbOdds is 1 in how many calls perturb runs before (20 if 0).
	perturbOdds int
}

// nativeCases must list every native (TestNativeCasesComplete).
var nativeCases = map[string]nativeCase{
	"seed.token_bucket": {
		file: "seed000-token-bucket.lua",
		gen: func(r *rand.Rand, key string) ([]string, []string) {
			num := func(choices ...string) string { return pick(r, choices...) }
			rate := num("10", "1", "0.5", "3.3", "0", "-1", "1e308", strconv.Itoa(r.Intn(100)+1))
			burst := num("20", "1", "0", "5.5", "-3", strconv.Itoa(r.Intn(50)))
			now := strconv.FormatFloat(float64(1000+r.Intn(100000))/float64(1+r.Intn(3)), 'g', -1, 64)
			cost := num("1", "0", "2", "0.5", "100", "-1")
			return []string{key}, []string{rate, burst, now, cost}
		},
		inspect: []string{"HGETALL %s", "PTTL %s", "TYPE %s", "OBJECT ENCODING %s"},
	},
	"redis_rate.allowN": {
		file:    "scripts/redis_rate-allowN.lua",
		gen:     redisRateGen,
		perturb: redisRatePerturb,
		inspect: []string{"GET %s", "PTTL %s", "TYPE %s", "OBJECT ENCODING %s"},
	},
	"redis_rate.allowAtMost": {
		file:    "scripts/redis_rate-allowAtMost.lua",
		gen:     redisRateGen,
		perturb: redisRatePerturb,
		inspect: []string{"GET %s", "PTTL %s", "TYPE %s", "OBJECT ENCODING %s"},
	},
	"rate-limit-redis.increment": {
		file: "scripts/rate-limit-redis-increment.lua",
		gen: func(r *rand.Rand, key string) ([]string, []string) {
			args := []string{numArg(r, "60000", "1000", "900000", "1", strconv.Itoa(r.Intn(5000)))}
			if r.Intn(50) == 0 {
				args = nil
			}
			return []string{key}, args
		},
		perturb: counterPerturb,
		inspect: []string{"GET %s", "PTTL %s", "TYPE %s", "OBJECT ENCODING %s"},
	},
	"spring-cloud-gateway.request_rate_limiter": {
		file: "scripts/spring-cloud-gateway-request_rate_limiter.lua",
		gen: func(r *rand.Rand, key string) ([]string, []string) {
			// Two keys: the tokens and the timestamp, another of the keys.
			other := map[string]string{"k0": "k1", "k1": "k2", "k2": "k0"}[key]
			if other == "" {
				other = "k0"
			}
			keys := []string{key, other}
			if r.Intn(4) == 0 {
				keys[0], keys[1] = keys[1], keys[0]
			}
			rate := numArg(r, "1", "2", "10", "0.5", "100", "3")
			capacity := numArg(r, "1", "5", "10", "20", "0", "7.5")
			now := numArg(r, strconv.Itoa(1700000000+r.Intn(40)), strconv.Itoa(1700000000+r.Intn(40)), "1700000000.5")
			requested := numArg(r, "1", "1", "2", "5", "0", "-1")
			args := []string{rate, capacity, now, requested}
			if r.Intn(50) == 0 {
				args = args[:r.Intn(4)]
			}
			return keys, args
		},
		perturb: counterPerturb,
		inspect: []string{"GET %s", "PTTL %s", "TYPE %s", "OBJECT ENCODING %s"},
	},
	"rate-limit-redis.get": {
		file: "scripts/rate-limit-redis-get.lua",
		gen: func(r *rand.Rand, key string) ([]string, []string) {
			if r.Intn(3) == 0 { // the counter moves in between (another script's INCR would)
				return []string{key}, []string{"x"}
			}
			return []string{key}, nil
		},
		perturb:     counterPerturb,
		perturbOdds: 3,
		inspect:     []string{"GET %s", "PTTL %s", "TYPE %s", "OBJECT ENCODING %s"},
	},
	"rate-limiter-flexible.incrTtl": {
		file: "scripts/rate-limiter-flexible-incrTtl.lua",
		gen: func(r *rand.Rand, key string) ([]string, []string) {
			points := numArg(r, "1", "1", "2", "5", "-1", "0")
			duration := numArg(r, "1", "2", "10", "60", "3600")
			args := []string{points, duration}
			if r.Intn(50) == 0 {
				args = args[:r.Intn(2)]
			}
			return []string{key}, args
		},
		perturb: counterPerturb,
		inspect: []string{"GET %s", "PTTL %s", "TYPE %s", "OBJECT ENCODING %s"},
	},
	"ulule-limiter.incr": {
		file: "scripts/ulule-limiter-incr.lua",
		gen: func(r *rand.Rand, key string) ([]string, []string) {
			count := numArg(r, "1", "1", "1", "2", "5")
			ttl := numArg(r, "1000", "60000", "500", "0", "-1")
			args := []string{count, ttl}
			if r.Intn(50) == 0 {
				args = args[:r.Intn(2)]
			}
			return []string{key}, args
		},
		perturb: counterPerturb,
		inspect: []string{"GET %s", "PTTL %s", "TYPE %s", "OBJECT ENCODING %s"},
	},
	"ulule-limiter.peek": {
		file: "scripts/ulule-limiter-peek.lua",
		gen: func(r *rand.Rand, key string) ([]string, []string) {
			return []string{key}, nil
		},
		perturb:     counterPerturb,
		perturbOdds: 3,
		inspect:     []string{"GET %s", "PTTL %s", "TYPE %s", "OBJECT ENCODING %s"},
	},
	"python-limits.incr_expire": {
		file: "scripts/python-limits-incr_expire.lua",
		gen: func(r *rand.Rand, key string) ([]string, []string) {
			expiry := numArg(r, "1", "2", "60", "3600")
			amount := numArg(r, "1", "1", "1", "2", "5")
			args := []string{expiry, amount}
			if r.Intn(50) == 0 {
				args = args[:r.Intn(2)]
			}
			return []string{key}, args
		},
		perturb: counterPerturb,
		inspect: []string{"GET %s", "PTTL %s", "TYPE %s", "OBJECT ENCODING %s"},
	},
	"python-limits.moving_window": {
		file: "scripts/python-limits-moving_window.lua",
		gen: func(r *rand.Rand, key string) ([]string, []string) {
			oldest := timestamp(r)
			if r.Intn(10) == 0 {
				oldest = hostileNumber(r)
			}
			args := []string{oldest, numArg(r, "1", "2", "5", "10", "-1")}
			if r.Intn(50) == 0 {
				args = args[:r.Intn(2)]
			}
			return []string{key}, args
		},
		perturb:     windowPerturb,
		perturbOdds: 2,
		inspect:     []string{"LRANGE %s 0 -1", "PTTL %s", "TYPE %s", "OBJECT ENCODING %s"},
	},
	"python-limits.acquire_moving_window": {
		file: "scripts/python-limits-acquire_moving_window.lua",
		gen: func(r *rand.Rand, key string) ([]string, []string) {
			now := timestamp(r)
			if r.Intn(10) == 0 {
				now = hostileNumber(r)
			}
			limit := numArg(r, "1", "3", "5", "10")
			expiry := numArg(r, "10", "60", "100", "1")
			amount := pick(r, "1", "1", "1", "1", "1", "1", "2", "3") // Lua pushes floor(amount) entries: no huge ones
			if r.Intn(10) == 0 {
				amount = pick(r, "0", "-1", "1.5", "2.9", "abc", "", "0x2", " 2", "1e1", "1001", "0.5")
			}
			args := []string{now, limit, expiry, amount}
			if r.Intn(50) == 0 {
				args = args[:r.Intn(4)]
			}
			return []string{key}, args
		},
		perturb: windowPerturb,
		inspect: []string{"LRANGE %s 0 -1", "PTTL %s", "TYPE %s", "OBJECT ENCODING %s"},
	},
	"throttled.cas": {
		file: "scripts/throttled-goredisstore-cas.lua",
		gen: func(r *rand.Rand, key string) ([]string, []string) {
			// throttled sends TATs in nanoseconds; a few values so the
			// swap succeeds often; ttls in seconds, some invalid
			old := pick(r, "1700000000000000000", "1700000001000000000", "5", "", "x")
			next := pick(r, "1700000000000000000", "1700000001000000000", "5", "1700000002500000000")
			ttl := numArg(r, "1", "2", "60")
			args := []string{old, next, ttl}
			if r.Intn(50) == 0 {
				args = args[:r.Intn(3)]
			}
			return []string{key}, args
		},
		perturb: func(r *rand.Rand, key string) []string {
			if r.Intn(4) == 0 {
				return []string{"DEL", key}
			}
			return []string{"SET", key, pick(r, "1700000000000000000", "1700000001000000000", "5", "", "x"),
				"EX", strconv.Itoa(1 + r.Intn(10))}
		},
		perturbOdds: 5,
		inspect:     []string{"GET %s", "PTTL %s", "TYPE %s", "OBJECT ENCODING %s"},
	},
}

// pick returns one of choices at random.
func pick(r *rand.Rand, choices ...string) string { return choices[r.Intn(len(choices))] }

// hostileNumber is a number argument a client should not send, but may:
// forms Lua reads differently from strtod or not at all, signs, zeros,
// magnitudes beyond any limit.
func hostileNumber(r *rand.Rand) string {
	return pick(r, "0", "-0", "0.0", "-1", "1.5", "-2.5", "1e308", "-1e308", "1e-300", "1e400", "abc", "",
		"010", " 5", "5 ", "0x10", "+3", ".5", "5.", "1e", "inf", "nan", "9223372036854775807",
		"9223372036854775808", "-9223372036854775809", "1_0", "2E3", "0.1", "3.3333333333333335")
}

// numArg returns one of the realistic choices, or (one time in ten) a
// hostile number.
func numArg(r *rand.Rand, realistic ...string) string {
	if r.Intn(10) == 0 {
		return hostileNumber(r)
	}
	return pick(r, realistic...)
}

// redisRateGen makes redis_rate's KEYS and ARGV: burst, rate, period,
// cost (go-redis/redis_rate sends them as integers; floats and worse
// come from hostile clients); now and then an argument short.
func redisRateGen(r *rand.Rand, key string) ([]string, []string) {
	burst := numArg(r, "1", "5", "10", "100", strconv.Itoa(r.Intn(200)))
	rate := numArg(r, "1", "2", "10", "100", strconv.Itoa(1+r.Intn(50)))
	period := numArg(r, "1", "1", "1", "60", "0.5", "2")
	cost := numArg(r, "1", "1", "1", "2", "0", "5", "20")
	args := []string{burst, rate, period, cost}
	if r.Intn(100) == 0 {
		args = args[:r.Intn(4)]
	}
	return []string{key}, args
}

// redisRatePerturb stores a TAT the script did not write, for a few
// seconds: around the test clock's now (216771200 s after 2017), in forms
// tonumber reads its own way, or text that is no number.
func redisRatePerturb(r *rand.Rand, key string) []string {
	switch r.Intn(4) {
	case 0:
		return []string{"DEL", key}
	case 1:
		return []string{"SET", key, pick(r, "abc", "1e999", "-1e999", "nan", "inf", "", "0x1A", "010"), "EX", "2"}
	}
	return []string{"SET", key, pick(r, " 216771300 ", "-5", "216771200.5", "1e308", "216771500", "2.1678e8",
		"216771210.000001", "216771200", strconv.Itoa(216771200+r.Intn(5000))), "EX", strconv.Itoa(1 + r.Intn(20))}
}

// counterPerturb leaves a counter key in states a fixed-window script
// must cope with: text, a count beyond 2^53 (which Lua rounds) or at the
// int64 limit, no TTL, a TTL about to end, no key.
func counterPerturb(r *rand.Rand, key string) []string {
	switch r.Intn(6) {
	case 0:
		return []string{"DEL", key}
	case 1:
		return []string{"PERSIST", key}
	case 2:
		return []string{"PEXPIRE", key, pick(r, "1", "2", strconv.Itoa(1+r.Intn(3000)))}
	}
	return []string{"SET", key, pick(r, "abc", "9007199254740993", "9223372036854775806", "9223372036854775807",
		"-9223372036854775808", "1.5", "0", "-3", " 7", "12"), "PX", strconv.Itoa(1 + r.Intn(20000))}
}

// timestamp is a client's clock reading as Python's limits sends it: Unix
// seconds with microseconds, within a few minutes; half of them on whole
// or half seconds of the first 80, so that entries fall on a window's
// edge.
func timestamp(r *rand.Rand) string {
	if r.Intn(2) == 0 {
		return strconv.FormatFloat(1_700_000_000+float64(r.Intn(160))/2, 'f', -1, 64)
	}
	return strconv.FormatFloat(1_700_000_000+r.Float64()*200, 'f', 6, 64)
}

// windowPerturb leaves a moving window's list in states the scripts must
// cope with: entries that are no number or are one in forms tonumber
// reads its own way, a value of another type, no key.
func windowPerturb(r *rand.Rand, key string) []string {
	switch r.Intn(5) {
	case 0:
		return []string{"DEL", key}
	case 1:
		return []string{"LPUSH", key, pick(r, "abc", "1e999", " 1700000100 ", "0x10", "-5", "")}
	case 2:
		return []string{"RPUSH", key, timestamp(r)}
	}
	return []string{"LPUSH", key, timestamp(r), timestamp(r)}
}

func TestNativeCasesComplete(t *testing.T) {
	for _, n := range script.Natives() {
		c, ok := nativeCases[n.Name]
		if !ok {
			t.Errorf("native %s has no differential case", n.Name)
			continue
		}
		body, err := os.ReadFile(filepath.Join("..", "libtest", "testdata", c.file))
		if err != nil {
			t.Fatal(err)
		}
		if sha := script.SHA1Hex(body); sha != n.SHA {
			t.Errorf("native %s: its script %s has SHA1 %s, the native claims %s", n.Name, c.file, sha, n.SHA)
		}
	}
}

// TestNativeScriptsMatchLua runs every native script and its Lua text side
// by side, on servers with the same clock, over random calls (mostly on a
// few keys, so calls follow each other on one key; some on keys of each
// wrong type; state perturbed now and then), and requires the same
// replies, the same state after a call now and then (value, TTL, type,
// encoding), at the end and after the native server restarted from its
// append-only log, the same effects for the log from every call (a third
// server, native too, and the Lua one write theirs to an effectTap; the
// restarted server's log holds exactly those effects), the
// same command and error statistics, and that most calls ran natively.
// With -v it logs the kinds of replies seen.
func TestNativeScriptsMatchLua(t *testing.T) {
	for _, n := range script.Natives() {
		c := nativeCases[n.Name]
		t.Run(n.Name, func(t *testing.T) {
			body, err := os.ReadFile(filepath.Join("..", "libtest", "testdata", c.file))
			if err != nil {
				t.Fatal(err)
			}
			luaTap, natTap := &effectTap{}, &effectTap{}
			_, luaAddr, luaClk := newTestServer(t, func(cfg *Config) {
				cfg.NativeScripts = false
				cfg.Durability = luaTap
			})
			tapSrv, tapAddr, tapClk := newTestServer(t, func(cfg *Config) { cfg.Durability = natTap })
			natSrv := newRestartable(t, func(cfg *Config) { // its log replays what natives did
				cfg.Persist.AppendOnly = true
				cfg.Persist.Save = nil
			})
			natClk := natSrv.clk
			lua, nat, tapped := dialRaw(t, luaAddr), natSrv.rc, dialRaw(t, tapAddr)
			compared := 0 // effect units compared so far
			sameEffects := func(what string, cmd []string) {
				t.Helper()
				luaTap.mu.Lock()
				natTap.mu.Lock()
				want, got := luaTap.units[compared:], natTap.units[compared:]
				compared = len(luaTap.units)
				luaTap.mu.Unlock()
				natTap.mu.Unlock()
				if len(want) != len(got) {
					t.Fatalf("%s %q: %d units of effects from lua, %d from the native", what, cmd, len(want), len(got))
				}
				for i := range want {
					if string(want[i]) != string(got[i]) {
						t.Fatalf("%s %q: effects\n lua    %q\n native %q", what, cmd, want[i], got[i])
					}
				}
			}
			both := func(what string, cmd ...string) {
				t.Helper()
				want := lua.do(cmd...)
				if got := nat.do(cmd...); want != got {
					t.Fatalf("%s %q:\n lua    %q\n native %q", what, cmd, want, got)
				}
				if got := tapped.do(cmd...); want != got {
					t.Fatalf("%s %q:\n lua    %q\n native (tapped) %q", what, cmd, want, got)
				}
				sameEffects(what, cmd)
			}
			both("loading", "SCRIPT", "LOAD", string(body))
			both("setup", "SET", "wrongtype", "x") // keys of each type
			both("setup", "HSET", "hash", "f", "1")
			both("setup", "RPUSH", "list", "1", "2", "x")
			r := rand.New(rand.NewSource(1))
			keys := []string{"k0", "k1", "k2", "wrongtype", "hash", "list"}
			inspect := func(key string) {
				t.Helper()
				for _, in := range c.inspect {
					both("inspecting", splitFormat(in, key)...)
				}
			}
			kinds := map[string]int{}
			calls := 3000
			if raceEnabled { // the lockcheck run in CI makes all 3000
				calls = 1500
			}
			for i := 0; i < calls; i++ {
				key := keys[r.Intn(3)]
				if r.Intn(6) == 0 {
					key = keys[3+r.Intn(len(keys)-3)]
				}
				if c.perturb != nil && r.Intn(cmp.Or(c.perturbOdds, 20)) == 0 {
					both("perturbing", c.perturb(r, keys[r.Intn(3)])...) // the typed keys stay
				}
				ks, as := c.gen(r, key)
				cmd := append([]string{"EVALSHA", n.SHA, strconv.Itoa(len(ks))}, append(ks, as...)...)
				if r.Intn(10) == 0 { // as throttled and node-redis send it
					cmd[0], cmd[1] = "EVAL", string(body)
				}
				want, got, gotTapped := lua.do(cmd...), nat.do(cmd...), tapped.do(cmd...)
				if cmd[0] == "EVAL" {
					cmd[1] = n.SHA + " (its text)"
				}
				if want != got || want != gotTapped {
					t.Fatalf("call %d %q:\n lua    %q\n native %q\n native (tapped) %q", i, cmd, want, got, gotTapped)
				}
				sameEffects("call "+strconv.Itoa(i), cmd)
				kinds[replyKind(want)]++
				if r.Intn(5) == 0 {
					inspect(key)
				}
				if r.Intn(4) == 0 { // milliseconds and microseconds; now and then long enough to expire
					d := msDuration(r.Intn(3000)) + time.Duration(r.Intn(1000))*time.Microsecond
					if r.Intn(5) == 0 { // within a millisecond: a PTTL of 0
						d = time.Duration(r.Intn(1000)) * time.Microsecond
					}
					if r.Intn(50) == 0 {
						d += msDuration(r.Intn(120_000))
					}
					luaClk.Advance(d)
					natClk.Advance(d)
					tapClk.Advance(d)
				}
			}
			for _, k := range keys {
				inspect(k)
			}
			for _, section := range []string{"commandstats", "errorstats"} {
				if want, got := callStats(lua.do("INFO", section)), callStats(tapped.do("INFO", section)); want != got {
					t.Fatalf("INFO %s:\n lua    %q\n native %q", section, want, got)
				}
			}
			t.Logf("replies: %v", kinds)
			if runs := natSrv.srv.nativeRunCount(); runs < int64(calls/3) || tapSrv.nativeRunCount() != runs {
				t.Fatalf("%d and %d of %d calls ran natively", runs, tapSrv.nativeRunCount(), calls)
			}
			natSrv.srv.Close()
			natSrv.waitStopped()
			// The log holds what the tapped native server's effects were.
			logged := loggedEffects(t, natSrv.dir, natSrv.srv.cfg.Persist.AppendFilename)
			natTap.mu.Lock()
			fromTap := bytes.Join(natTap.units, nil)
			natTap.mu.Unlock()
			if !bytes.Equal(logged, fromTap) {
				i := 0
				for i < min(len(logged), len(fromTap)) && logged[i] == fromTap[i] {
					i++
				}
				t.Fatalf("the log differs from the effects at byte %d of %d/%d:\n log %q\n tap %q", i, len(logged), len(fromTap),
					logged[max(0, i-200):min(len(logged), i+200)], fromTap[max(0, i-200):min(len(fromTap), i+200)])
			}
			natSrv.start() // from the append-only log alone: the natives' effects as logged
			nat = natSrv.rc
			for _, k := range keys {
				inspect(k)
			}
		})
	}
}

// loggedEffects reads the append-only log in dir and returns its effects,
// encoded again one after the other (without group records).
func loggedEffects(t *testing.T, dir, name string) []byte {
	t.Helper()
	lg, err := persistence.OpenLog(persistence.LogConfig{Dir: dir, Name: name})
	if err != nil {
		t.Fatal(err)
	}
	defer lg.Close()
	var b []byte
	if _, err := lg.Load(func(e persistence.Effect) error {
		b = persistence.AppendEffect(b, &e)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return b
}

// callStats is an INFO section without its times (usec=, usec_per_call=),
// which differ from run to run.
func callStats(info string) string {
	var b strings.Builder
	for _, line := range strings.Split(info, "\r\n") {
		var fields []string
		for _, f := range strings.Split(line, ",") {
			if name, _, _ := strings.Cut(f, "="); name != "usec" && name != "usec_per_call" {
				fields = append(fields, f)
			}
		}
		b.WriteString(strings.Join(fields, ",") + "\n")
	}
	return b.String()
}

// replyKind sums a reply up for the log: an error's first words, an
// array's size and first element, a scalar's type.
func replyKind(reply string) string {
	line, _, _ := strings.Cut(reply, "\r\n")
	switch {
	case strings.HasPrefix(line, "-"):
		if len(line) > 40 {
			line = line[:40]
		}
		return line
	case strings.HasPrefix(line, "*"):
		_, rest, _ := strings.Cut(reply, "\r\n")
		first, _, _ := strings.Cut(rest, "\r\n")
		if len(first) > 2 {
			first = first[:2] + "…"
		}
		return line + "," + first
	}
	return line[:1]
}

// nativeRunCount is how many times natives ran.
func (s *Server) nativeRunCount() int64 {
	var n int64
	for i := range s.scripts.nativeRuns {
		n += s.scripts.nativeRuns[i].Load()
	}
	return n
}

func msDuration(ms int) time.Duration { return time.Duration(ms) * time.Millisecond }

// splitFormat splits a command template and puts key in place of "%s".
func splitFormat(tmpl, key string) []string {
	var out []string
	for _, f := range strings.Fields(tmpl) {
		if f == "%s" {
			f = key
		}
		out = append(out, f)
	}
	return out
}

// TestNativeRefusalsMatchLua: what refuses a script's commands refuses a
// native's alike, with the same replies: a write while the append-only
// file cannot be written (MISCONF), a key added to a full shard (OOM),
// and EVALSHA_RO (the Lua text runs and refuses the writes). The states
// in which a native's direct calls (script.Keyspace) go through Call
// instead give the same replies too: a user with key patterns, client
// tracking, a MONITOR.
func TestNativeRefusalsMatchLua(t *testing.T) {
	conditions := []struct {
		name  string
		cfg   func(*Config)
		setup func(*testing.T, *Server, *rawConn)
		cmd   string
	}{
		{"aof-error", nil, func(_ *testing.T, s *Server, _ *rawConn) {
			msg := "disk full"
			s.persist.aofWriteErr.Store(&msg)
		}, "EVALSHA"},
		{"full-shard", func(c *Config) { c.Shards = 1; c.maxKeysPerShard = 2 }, func(_ *testing.T, _ *Server, rc *rawConn) {
			rc.do("SET", "k0", "1")
			rc.do("SET", "other", "1")
		}, "EVALSHA"},
		{"read-only", nil, nil, "EVALSHA_RO"},
		{"restricted-user", nil, func(_ *testing.T, _ *Server, rc *rawConn) {
			rc.do("ACL", "SETUSER", "u", "on", ">p", "~k*", "+@all")
			rc.do("AUTH", "u", "p")
		}, "EVALSHA"},
		{"tracking", nil, func(_ *testing.T, _ *Server, rc *rawConn) { rc.do("CLIENT", "TRACKING", "on") }, "EVALSHA"},
		{"monitor", nil, func(t *testing.T, s *Server, _ *rawConn) {
			mon := dialRaw(t, s.Addr().String())
			mon.do("MONITOR")
		}, "EVALSHA"},
	}
	for _, n := range script.Natives() {
		c := nativeCases[n.Name]
		body, err := os.ReadFile(filepath.Join("..", "libtest", "testdata", c.file))
		if err != nil {
			t.Fatal(err)
		}
		for _, cond := range conditions {
			t.Run(n.Name+"/"+cond.name, func(t *testing.T) {
				var conns []*rawConn
				for _, native := range []bool{false, true} {
					s, addr, _ := newTestServer(t, func(cfg *Config) {
						cfg.NativeScripts = native
						if cond.cfg != nil {
							cond.cfg(cfg)
						}
					})
					rc := dialRaw(t, addr)
					rc.do("SCRIPT", "LOAD", string(body))
					if cond.setup != nil {
						cond.setup(t, s, rc)
					}
					conns = append(conns, rc)
				}
				r := rand.New(rand.NewSource(2))
				for i := 0; i < 40; i++ {
					ks, as := c.gen(r, pick(r, "k0", "k1"))
					cmd := append([]string{cond.cmd, n.SHA, strconv.Itoa(len(ks))}, append(ks, as...)...)
					if want, got := conns[0].do(cmd...), conns[1].do(cmd...); want != got {
						t.Fatalf("call %d %q:\n lua    %q\n native %q", i, cmd, want, got)
					}
				}
			})
		}
	}
}

// redisRateServer starts a server and connects to it; it returns
// redis_rate's allowN script text (not loaded) and its SHA1.
func redisRateServer(t *testing.T) (*Server, *rawConn, string, string) {
	s, addr, _ := newTestServer(t)
	body, err := os.ReadFile("../libtest/testdata/scripts/redis_rate-allowN.lua")
	if err != nil {
		t.Fatal(err)
	}
	return s, dialRaw(t, addr), string(body), scriptSHA(body)
}

// TestEvalSHAAnyCaseRunsNatively: a known script's digest sent in upper
// or mixed case runs its native, as the lower-case one does (the cache
// itself takes any case, so a miss here would fall back to Lua unseen).
func TestEvalSHAAnyCaseRunsNatively(t *testing.T) {
	s, c, body, sha := redisRateServer(t)
	if got := c.do("SCRIPT", "LOAD", body); got != "$40\r\n"+sha+"\r\n" {
		t.Fatalf("SCRIPT LOAD: %q", got)
	}
	for i, digest := range []string{sha, strings.ToUpper(sha), strings.ToUpper(sha[:20]) + sha[20:]} {
		before := s.nativeRunCount()
		if got := c.do("EVALSHA", digest, "1", "k", "10", "1", "1", "1"); !strings.HasPrefix(got, "*4\r\n:1\r\n") {
			t.Fatalf("EVALSHA %s: %q", digest, got)
		}
		if n := s.nativeRunCount(); n != before+1 {
			t.Fatalf("EVALSHA %d (%s): native runs %d -> %d, want one more", i, digest, before, n)
		}
	}
}

// TestEvalSHANativeRemembered: the native a connection's EVALSHA found is
// remembered for its next EVALSHA of the same digest, but not past a
// SCRIPT FLUSH (NOSCRIPT, as Redis answers) nor past CONFIG SET
// turnstile-native-scripts no (the Lua text runs).
func TestEvalSHANativeRemembered(t *testing.T) {
	s, c, body, sha := redisRateServer(t)
	call := func() string { return c.do("EVALSHA", sha, "1", "k", "10", "1", "1", "1") }
	ran := func(want int64, what string) {
		t.Helper()
		if got := s.nativeRunCount(); got != want {
			t.Fatalf("%s: native runs %d, want %d", what, got, want)
		}
	}
	c.do("SCRIPT", "LOAD", body)
	for i := range 2 {
		if got := call(); !strings.HasPrefix(got, "*4\r\n:1\r\n") {
			t.Fatalf("EVALSHA %d: %q", i, got)
		}
	}
	ran(2, "two calls")
	if got := c.do("SCRIPT", "FLUSH"); got != "+OK\r\n" {
		t.Fatalf("SCRIPT FLUSH: %q", got)
	}
	if got := call(); !strings.HasPrefix(got, "-NOSCRIPT ") {
		t.Fatalf("EVALSHA after SCRIPT FLUSH: %q", got)
	}
	c.do("SCRIPT", "LOAD", body)
	if got := c.do("CONFIG", "SET", "turnstile-native-scripts", "no"); got != "+OK\r\n" {
		t.Fatalf("CONFIG SET: %q", got)
	}
	if got := call(); !strings.HasPrefix(got, "*4\r\n:1\r\n") {
		t.Fatalf("EVALSHA in Lua: %q", got)
	}
	ran(2, "natives off")
	c.do("CONFIG", "SET", "turnstile-native-scripts", "yes")
	call()
	ran(3, "natives on again")
}
