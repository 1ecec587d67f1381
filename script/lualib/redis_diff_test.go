package lualib

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	lua "github.com/yuin/gopher-lua"

	"github.com/turnstile/turnstile/internal/testport"
)

// The differential test runs each Lua expression of diffCases as
// EVAL "<prelude> return <expr>" 0 on a real redis-server and through
// gopher-lua with this package's libraries, converts both results the way
// Redis turns a Lua value into a RESP2 reply, and compares them. Errors are
// compared by their message without Redis's script location framing. Each
// expression gets a fresh Lua state on both sides (SCRIPT FLUSH on Redis),
// so settings changed by one (cjson.encode_max_depth...) do not leak.

// diffPrelude defines helpers usable in expressions: hex(s) shows bytes in
// hex, repr(v) renders any value in a form that does not depend on the
// engine's number formatting or table order.
const diffPrelude = `
local function hex(s)
  return (string.gsub(s, '.', function(c) return string.format('%02x', string.byte(c)) end))
end
local function repr(v)
  local t = type(v)
  if t == 'number' then
    if v == math.floor(v) and v > -1e15 and v < 1e15 then
      return 'n:' .. string.format('%d', v) .. ((v == 0 and 1/v < 0) and '(-0)' or '')
    end
    return 'n:0x' .. hex(struct.pack('>d', v))
  elseif t == 'string' then return 's:' .. v
  elseif t == 'boolean' then return v and 'true' or 'false'
  elseif t == 'nil' then return 'nil'
  elseif v == cjson.null then return 'null'
  elseif t == 'table' then
    local keys = {}
    for k in pairs(v) do keys[#keys + 1] = k end
    table.sort(keys, function(a, b) return repr(a) < repr(b) end)
    local parts = {}
    for _, k in ipairs(keys) do parts[#parts + 1] = repr(k) .. '=' .. repr(v[k]) end
    return '{' .. table.concat(parts, ',') .. '}'
  end
  return t
end
`

// diffScript is the whole script for one expression.
func diffScript(expr string) string {
	return diffPrelude + "return " + expr
}

func TestRedisDifferential(t *testing.T) {
	addr := startRedis(t)
	ctx := context.Background()
	client := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, ReadTimeout: 10 * time.Second})
	defer client.Close()
	cases := diffCases()
	if len(cases) < 150 {
		t.Fatalf("only %d cases", len(cases))
	}
	seen := map[string]bool{}
	deadline := time.Now().Add(2 * time.Minute)
	for i, expr := range cases {
		if seen[expr] {
			t.Errorf("case %d repeats %q", i, expr)
		}
		seen[expr] = true
		if time.Now().After(deadline) {
			t.Fatalf("out of time after %d cases", i)
		}
		if err := client.ScriptFlush(ctx).Err(); err != nil {
			t.Fatalf("SCRIPT FLUSH: %v", err)
		}
		want := redisEval(ctx, client, diffScript(expr))
		got := gopherEval(diffScript(expr))
		if !reflect.DeepEqual(want, got) {
			t.Errorf("case %d: %s\n redis: %s\n  ours: %s", i, expr, show(want), show(got))
		}
	}
	for _, expr := range knownDifferences {
		if err := client.ScriptFlush(ctx).Err(); err != nil {
			t.Fatalf("SCRIPT FLUSH: %v", err)
		}
		want := redisEval(ctx, client, diffScript(expr))
		got := gopherEval(diffScript(expr))
		verdict := "differs (known)"
		if reflect.DeepEqual(want, got) {
			verdict = "now the same"
		}
		t.Logf("%s: %s\n redis: %s\n  ours: %s", verdict, expr, show(want), show(got))
	}
}

// evalError is a script error reduced to the message the script raised.
type evalError string

// redisFrame matches what Redis puts around a script error's message:
// "ERR ", the position luaL_error adds, and " script: <sha>, on @...".
var (
	redisErrSuffix = regexp.MustCompile(` script: [0-9a-f]+, on @user_script:\d+\.$`)
)

func redisEval(ctx context.Context, c *redis.Client, script string) any {
	v, err := c.Eval(ctx, script, nil).Result()
	return redisResult(v, err)
}

// redisResult converts an EVAL result to the form gopherReply gives.
func redisResult(v any, err error) any {
	if errors.Is(err, redis.Nil) {
		return nil
	}
	if err != nil {
		var rerr redis.Error
		if !errors.As(err, &rerr) {
			panic(fmt.Sprintf("redis: %v", err))
		}
		msg := strings.TrimPrefix(err.Error(), "ERR ")
		return evalError(redisErrSuffix.ReplaceAllString(msg, ""))
	}
	return normalizeRedis(v)
}

// normalizeRedis turns go-redis values into the types gopherReply makes.
func normalizeRedis(v any) any {
	switch x := v.(type) {
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = normalizeRedis(e)
		}
		return out
	case redis.Error:
		return evalError(x.Error())
	}
	return v
}

// gopherEval runs script in a fresh gopher-lua state with the libraries.
func gopherEval(script string) any {
	return gopherEvalWith(script, func(*lua.LState) {})
}

// gopherEvalWith is gopherEval with setup run on the state first.
func gopherEvalWith(script string, setup func(*lua.LState)) any {
	// Redis's Lua stack holds 8000 values; gopher-lua's registry must
	// be allowed to grow that far (the size the package doc suggests).
	L := lua.NewState(lua.Options{RegistryMaxSize: 16384})
	defer L.Close()
	Open(L)
	setup(L)
	fn, err := L.Load(strings.NewReader(script), "user_script")
	if err != nil {
		return evalError("compile: " + err.Error())
	}
	L.Push(fn)
	if err := L.PCall(0, 1, nil); err != nil {
		var apiErr *lua.ApiError
		if errors.As(err, &apiErr) && apiErr.Object != nil {
			return evalError(apiErr.Object.String())
		}
		return evalError(err.Error())
	}
	return gopherReply(L.Get(-1), 0)
}

// gopherReply converts a Lua value as Redis 7.0 does for a RESP2 reply:
// strings as they are, numbers truncated to integers, true as 1, false and
// nil as nil, tables with an "err" or "ok" string as error or status, other
// tables as the array of t[1], t[2]... up to the first nil.
func gopherReply(v lua.LValue, depth int) any {
	switch x := v.(type) {
	case lua.LString:
		return string(x)
	case lua.LNumber:
		return truncInt64(float64(x))
	case lua.LBool:
		if x {
			return int64(1)
		}
		return nil
	case *lua.LTable:
		if e, ok := x.RawGetString("err").(lua.LString); ok {
			return evalError(string(e))
		}
		if s, ok := x.RawGetString("ok").(lua.LString); ok {
			return string(s)
		}
		out := []any{}
		for i := 1; depth < 100; i++ {
			e := x.RawGetInt(i)
			if e == lua.LNil {
				break
			}
			out = append(out, gopherReply(e, depth+1))
		}
		return out
	}
	return nil
}

func show(v any) string {
	s := fmt.Sprintf("%#v", v)
	if len(s) > 600 {
		s = s[:600] + "..."
	}
	return s
}

// startRedis runs a private redis-server on a free loopback port, or skips
// the test when there is none (fails when TURNSTILE_REQUIRE_REDIS=1).
func startRedis(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("TURNSTILE_REQUIRE_REDIS") == "1" {
			t.Fatal("redis-server not found and TURNSTILE_REQUIRE_REDIS=1")
		}
		t.Skip("redis-server not on PATH; install redis-server to run the differential test")
	}
	port := testport.Free(t, "127.0.0.1") // not one a connection can take before the server listens
	cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", t.TempDir())
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return addr
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("redis-server did not start")
	return ""
}
