package server

import (
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/turnstile/turnstile/script"
)

// nativeCase drives the differential test of one native script: where its
// Lua text is, how to make random KEYS and ARGV for it, and which commands
// show the state it leaves on a key.
type nativeCase struct {
	file    string                                               // under libtest/testdata
	gen     func(r *rand.Rand, key string) (keys, args []string) // one call's KEYS and ARGV
	inspect []string                                             // commands run on each key afterwards, "%s" for the key
}

// nativeCases must list every native (TestNativeCasesComplete).
var nativeCases = map[string]nativeCase{
	"seed.token_bucket": {
		file: "seed000-token-bucket.lua",
		gen: func(r *rand.Rand, key string) ([]string, []string) {
			num := func(choices ...string) string { return choices[r.Intn(len(choices))] }
			rate := num("10", "1", "0.5", "3.3", "0", "-1", "1e308", strconv.Itoa(r.Intn(100)+1))
			burst := num("20", "1", "0", "5.5", "-3", strconv.Itoa(r.Intn(50)))
			now := strconv.FormatFloat(float64(1000+r.Intn(100000))/float64(1+r.Intn(3)), 'g', -1, 64)
			cost := num("1", "0", "2", "0.5", "100", "-1")
			return []string{key}, []string{rate, burst, now, cost}
		},
		inspect: []string{"HGETALL %s", "PTTL %s", "TYPE %s"},
	},
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
// by side, on two servers with the same clock, over random calls (the same
// key repeatedly, then others; some keys of the wrong type), and requires
// the same replies and the same state afterwards.
func TestNativeScriptsMatchLua(t *testing.T) {
	for _, n := range script.Natives() {
		c := nativeCases[n.Name]
		t.Run(n.Name, func(t *testing.T) {
			body, err := os.ReadFile(filepath.Join("..", "libtest", "testdata", c.file))
			if err != nil {
				t.Fatal(err)
			}
			_, luaAddr, luaClk := newTestServer(t, func(cfg *Config) { cfg.NativeScripts = false })
			natSrv, natAddr, natClk := newTestServer(t)
			lua, nat := dialRaw(t, luaAddr), dialRaw(t, natAddr)
			for _, rc := range []*rawConn{lua, nat} {
				if got := rc.do("SCRIPT", "LOAD", string(body)); got != fmt.Sprintf("$40\r\n%s\r\n", n.SHA) {
					t.Fatalf("SCRIPT LOAD: %q", got)
				}
			}
			nat.do("SET", "wrongtype", "x")
			lua.do("SET", "wrongtype", "x")
			r := rand.New(rand.NewSource(1))
			keys := []string{"k0", "k1", "k2", "wrongtype"}
			for i := 0; i < 3000; i++ {
				key := keys[r.Intn(len(keys))]
				ks, as := c.gen(r, key)
				cmd := append([]string{"EVALSHA", n.SHA, strconv.Itoa(len(ks))}, append(ks, as...)...)
				want, got := lua.do(cmd...), nat.do(cmd...)
				if want != got {
					t.Fatalf("call %d %q:\n lua    %q\n native %q", i, cmd, want, got)
				}
				if r.Intn(4) == 0 {
					d := r.Intn(3000)
					luaClk.Advance(msDuration(d))
					natClk.Advance(msDuration(d))
				}
			}
			for _, k := range keys {
				for _, in := range c.inspect {
					args := splitFormat(in, k)
					if want, got := lua.do(args...), nat.do(args...); want != got {
						t.Errorf("%q: lua %q, native %q", args, want, got)
					}
				}
			}
			if !natSrv.scriptsRanNatively() {
				t.Fatal("the native server never ran the script natively")
			}
		})
	}
}

// scriptsRanNatively reports whether any native ran.
func (s *Server) scriptsRanNatively() bool {
	for i := range s.scripts.nativeRuns {
		if s.scripts.nativeRuns[i].Load() > 0 {
			return true
		}
	}
	return false
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
