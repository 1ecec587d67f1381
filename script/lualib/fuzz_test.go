package lualib

import (
	"encoding/binary"
	"errors"
	"math"
	"strings"
	"testing"

	lua "github.com/yuin/gopher-lua"
)

// call calls fn in L with args, protected, and returns its results. A
// failure must be a Lua error (ApiErrorRun); a Go panic inside the
// libraries, which gopher-lua reports as ApiErrorPanic, fails the test.
func call(t *testing.T, L *lua.LState, fn lua.LValue, args ...lua.LValue) ([]lua.LValue, *lua.ApiError) {
	t.Helper()
	base := L.GetTop()
	err := L.CallByParam(lua.P{Fn: fn, NRet: lua.MultRet, Protect: true}, args...)
	if err != nil {
		var apiErr *lua.ApiError
		if !errors.As(err, &apiErr) || apiErr.Type != lua.ApiErrorRun {
			t.Fatalf("not a Lua error: %v", err)
		}
		L.SetTop(base)
		return nil, apiErr
	}
	results := make([]lua.LValue, 0, L.GetTop()-base)
	for i := base + 1; i <= L.GetTop(); i++ {
		results = append(results, L.Get(i))
	}
	L.SetTop(base)
	return results, nil
}

func FuzzCJSONDecode(f *testing.F) {
	for _, seed := range []string{
		`{"a":[1,2,{"b":null}],"c":"\u00e9\ud83d\ude00"}`, `[1,2,3]`, `"x\/y"`, `1e400`, `0x1p4`,
		`nan(12)`, `-Infinity`, `[[[[]]]]`, `{"a":1,"a":2}`, `"\ud83d"`, "\x00a", "1\x00", `[1,]`,
		`{"":{}}`, `  true  `, `[-0, 01, +1]`, strings.Repeat("[", 1001),
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, text string) {
		L := lua.NewState(lua.Options{SkipOpenLibs: true})
		defer L.Close()
		OpenCJSON(L)
		mod := L.GetGlobal("cjson").(*lua.LTable)
		decode, encode := mod.RawGetString("decode"), mod.RawGetString("encode")
		res, err := call(t, L, decode, lua.LString(text))
		if err != nil {
			return
		}
		if len(res) != 1 {
			t.Fatalf("decode returned %d values", len(res))
		}
		// What decodes encodes, unless it holds NaN or Inf; and the text
		// encode writes decodes to a value that encodes to the same text.
		out, err := call(t, L, encode, res[0])
		if err != nil {
			if !strings.Contains(err.Object.String(), "must not be NaN or Inf") {
				t.Fatalf("encode of a decoded value failed: %v", err.Object)
			}
			return
		}
		again, err := call(t, L, decode, out[0])
		if err != nil {
			t.Fatalf("decode of %q failed: %v", out[0], err.Object)
		}
		out2, err := call(t, L, encode, again[0])
		if err != nil || out2[0] != out[0] {
			t.Fatalf("encode is not stable: %q then %v (%v)", out[0], out2, err)
		}
	})
}

func FuzzCmsgpackUnpack(f *testing.F) {
	for _, seed := range []string{
		"\x93\x01\x02\x03", "\x81\xa1a\xc3", "\xcf\xff\xff\xff\xff\xff\xff\xff\xff", "\xcb\x7f\xf8\x00\x00\x00\x00\x00\x00",
		"\xca\x3f\xc0\x00\x00", "\xd9\x03abc", "\xdc\x00\x02\x01\xc0", "\xde\x00\x01\x01\x02", "\x81\xc0\x01",
		"\xcc", "\xc1", "\x01\x02\x03", "\x91\x91\x91\x91\x91\x91\x91\x91\x91\x91\x91\x91\x91\x91\x91\x91\x91\x91\x01",
		"\x82\x02\xa1b\x01\xa1a", "",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if hasLargeIndex(data) {
			t.Skip("a large integer key would make gopher-lua allocate a huge array part")
		}
		L := lua.NewState(lua.Options{SkipOpenLibs: true})
		defer L.Close()
		OpenCmsgpack(L)
		mod := L.GetGlobal("cmsgpack").(*lua.LTable)
		pack, unpack := mod.RawGetString("pack"), mod.RawGetString("unpack")
		values, err := call(t, L, unpack, lua.LString(data))
		if err != nil || len(values) == 0 {
			return
		}
		// Packing what was unpacked and repeating that reaches a fixed
		// point within a few rounds (each round may only drop holes and
		// the tables nested too deep, which pack writes as nil).
		packed, err := call(t, L, pack, values...)
		if err != nil {
			t.Fatalf("pack of unpacked values failed: %v", err.Object)
		}
		for round := 0; round < 4; round++ {
			again, err := call(t, L, unpack, packed[0])
			if err != nil && strings.Contains(err.Object.String(), "table index is nil") {
				// A table used as a map key beyond the nesting limit is
				// packed as nil, and a nil key cannot be unpacked: Redis
				// 7.0 packs and fails exactly so ("table index is nil").
				return
			}
			if err != nil {
				t.Fatalf("unpack of %q failed: %v", packed[0], err.Object)
			}
			next, err := call(t, L, pack, again...)
			if err != nil {
				t.Fatalf("pack failed: %v", err.Object)
			}
			if next[0] == packed[0] {
				return
			}
			packed = next
		}
		t.Fatalf("pack and unpack do not settle: still changing at %q", packed[0])
	})
}

// hasLargeIndex reports, conservatively, whether data holds anywhere a
// msgpack number that is an integer from 2^16 up to gopher-lua's
// MaxArrayIndex: as a table key it would make gopher-lua grow the table's
// array part to that size (Lua 5.1 would use a hash node), which can take
// gigabytes from a few input bytes.
func hasLargeIndex(data []byte) bool {
	for i, c := range data {
		rest := data[i+1:]
		var f float64
		switch {
		case c == 0xce && len(rest) >= 4:
			f = float64(binary.BigEndian.Uint32(rest))
		case c == 0xcf && len(rest) >= 8:
			f = float64(int64(binary.BigEndian.Uint64(rest)))
		case c == 0xd2 && len(rest) >= 4:
			f = float64(int32(binary.BigEndian.Uint32(rest)))
		case c == 0xd3 && len(rest) >= 8:
			f = float64(int64(binary.BigEndian.Uint64(rest)))
		case c == 0xca && len(rest) >= 4:
			f = float64(math.Float32frombits(binary.BigEndian.Uint32(rest)))
		case c == 0xcb && len(rest) >= 8:
			f = math.Float64frombits(binary.BigEndian.Uint64(rest))
		default:
			continue
		}
		if f >= 1<<16 && f < float64(lua.MaxArrayIndex) {
			return true
		}
	}
	return false
}
