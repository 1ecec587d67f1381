package script

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	lua "github.com/yuin/gopher-lua"

	"github.com/turnstile/turnstile/resp"
)

// foldCases are scripts whose replies must not change when their
// constant globals are folded: library functions read directly, through
// locals, _G and branches that pick one library or another (a jump lands
// on the field read), in loops and closures, with globals that do not
// exist, fields libraries lack, bad arguments (the error names the
// function), KEYS and ARGV (set on every run), and loadstring.
var foldCases = []string{
	"return tonumber(ARGV[1]) + 1",
	"return {math.floor(1.5), math.ceil(1.5), math.min(3, 2), string.len('abc')}",
	"return type((ARGV[1] == '1' and math or string).len)",
	"local t = ARGV[1] == '1' and redis or math; return type(t.call)",
	"local f = (ARGV[1] == '1') and math.floor or math.ceil; return f(1.5)",
	"return type(_G.tonumber) .. type(_G.redis.call)",
	"local r = 0; for i = 1, 10 do r = r + math.max(i, 5) end; return r",
	"local n = 0; for k, v in pairs({a = 1, b = 2}) do n = n + v end; return n",
	"local function f(x) return math.abs(x) + tonumber(ARGV[1]) end; return f(-3)",
	"local up = math; return (function() return up.floor(2.5) end)()",
	"local t = {}; for i = 1, 60 do t[i] = math.floor(i / 2) end; return t",
	"return {1, 2, 3, math.floor(4.5), unpack({5, 6})}",
	"return nosuch",
	"return math.nosuch",
	"return math.nosuch(1)",
	"return math.floor('x')",
	"return tonumber()",
	"return string.rep()",
	"return KEYS[1] .. ARGV[1] .. #KEYS .. #ARGV",
	"KEYS[1] = 'changed'; return KEYS[1]",
	"return redis.call('get', KEYS[1])",
	"return redis.pcall('incr', KEYS[1])",
	"local ok, err = pcall(math.floor); return {ok and 1 or 0, err}",
	"return loadstring('return math.floor(2.5)')()",
	"math.floor = nil",
	"x = math.floor(1)",
	"return bit.band(6, 3) + cjson.decode('[7]')[1]",
	"local s = 'abc'; return s:upper() .. s:len()",
	"if ARGV[1] == '1' then return redis.status_reply('ONE') else return redis.error_reply('TWO') end",
	"local a = ARGV[1] == '1' and 1 or 2; return a + math.floor(a / 2)",
	"local i = 0; while i < 3 do i = i + 1; if math.fmod(i, 2) == 0 then break end end; return i",
	"local t = setmetatable({}, {__index = math}); return t.floor(3.5)",
	// The loop jumps back to its first instruction, the read of t.floor,
	// right after t's first load: that read must stay a read.
	"local n, out = 0, {}; local t = math; repeat local f = t.floor; out[#out + 1] = type(f); t = string; n = n + 1 until n == 2; return out",
}

// TestFoldKeepsReplies runs every fold case, and every library script in
// libtest/testdata, on an engine that folds and on one that does not:
// the replies (values and errors) must be equal.
func TestFoldKeepsReplies(t *testing.T) {
	folded, plain := New(Config{Version: "7.0.15"}), New(Config{Version: "7.0.15"})
	defer folded.Close()
	defer plain.Close()
	plain.noFold = true
	bodies := append([]string(nil), foldCases...)
	files, err := filepath.Glob("../libtest/testdata/scripts/*.lua")
	if err != nil || len(files) == 0 {
		t.Fatalf("library scripts: %v (%d)", err, len(files))
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		bodies = append(bodies, string(b))
	}
	run := func(e *Engine, body, arg string) string {
		var w resp.Writer
		h := &fakeHost{kv: map[string]string{"k": "v"}}
		e.Run(&Request{Body: []byte(body), Host: h, W: &w,
			Keys: [][]byte{[]byte("k"), []byte("k2")}, Args: [][]byte{[]byte(arg), []byte("10"), []byte("1"), []byte("1")}})
		return string(w.Bytes())
	}
	for _, body := range bodies {
		for _, arg := range []string{"1", "2"} {
			got, want := run(folded, body, arg), run(plain, body, arg)
			if got != want {
				t.Errorf("%.60q with ARGV[1]=%s:\nfolded %q\n plain %q", body, arg, got, want)
			}
		}
	}
}

// TestFoldRewritesReads checks that folding happens: in the seed token
// bucket script no global but KEYS and ARGV is still read by name, and
// no library field through its proxy.
func TestFoldRewritesReads(t *testing.T) {
	body, err := os.ReadFile("../libtest/testdata/seed000-token-bucket.lua")
	if err != nil {
		t.Fatal(err)
	}
	e := New(Config{})
	defer e.Close()
	if err := e.Cache(body); err != nil {
		t.Fatal(err)
	}
	p := e.scripts[SHA1Hex(body)].fn.Proto
	var left []string
	loads := 0
	for _, inst := range p.Code {
		switch opcode(inst) {
		case lua.OP_GETGLOBAL:
			if name := p.Constants[argBx(inst)].String(); name != "KEYS" && name != "ARGV" {
				left = append(left, "global "+name)
			}
		case lua.OP_GETTABLEKS:
			if c := argC(inst); isK(c) {
				left = append(left, "field "+p.Constants[indexK(c)].String())
			}
		case lua.OP_LOADK:
			if _, ok := p.Constants[argBx(inst)].(*lua.LFunction); ok {
				loads++
			}
		}
	}
	if len(left) > 0 {
		t.Errorf("reads not folded: %s", strings.Join(left, ", "))
	}
	// tonumber ×6, redis.call ×3, math.min, math.ceil, math.floor.
	if loads != 12 {
		t.Errorf("%d loads of a constant function, want 12", loads)
	}
}
