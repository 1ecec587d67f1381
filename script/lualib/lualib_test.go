package lualib

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	lua "github.com/yuin/gopher-lua"
)

// evalString runs "return <expr>" (with the differential test's prelude) in
// a fresh state and renders the first result: strings as they are, numbers
// with %.14g, nil and booleans by name, errors as "error: <message>" without
// the position prefix.
func evalString(t *testing.T, expr string) string {
	t.Helper()
	L := lua.NewState()
	defer L.Close()
	Open(L)
	if err := L.DoString(diffPrelude + "return " + expr); err != nil {
		msg := err.(*lua.ApiError).Object.String()
		if i := strings.Index(msg, ": "); i >= 0 && strings.HasPrefix(msg, "<string>:") {
			msg = msg[i+2:]
		}
		return "error: " + msg
	}
	switch v := L.Get(-1).(type) {
	case lua.LString:
		return string(v)
	case lua.LNumber:
		return formatG(float64(v), 14)
	default:
		return v.String()
	}
}

// TestLibraries checks results known from Redis 7.0 without needing a
// redis-server (the differential test covers far more).
func TestLibraries(t *testing.T) {
	cases := []struct{ expr, want string }{
		{`cjson.encode({1, 2, 3})`, `[1,2,3]`},
		{`cjson.encode({})`, `{}`},
		{`cjson.encode({a = {b = 'c/d'}})`, `{"a":{"b":"c\/d"}}`},
		{`cjson.encode(0.1)`, `0.1`},
		{`cjson.encode(1/3)`, `0.33333333333333`},
		{`cjson.encode(2^53)`, `9.007199254741e+15`},
		{`cjson.encode('\0\127"\\')`, `"\u0000\u007f\"\\"`},
		{`cjson.encode({1, nil, 3})`, `[1,null,3]`},
		{`cjson.encode({[1] = 1, [20] = 2})`, `error: Cannot serialise table: excessively sparse array`},
		{`cjson.encode({[true] = 1})`, `error: Cannot serialise boolean: table key must be a number or string`},
		{`cjson.encode(1/0)`, `error: Cannot serialise number: must not be NaN or Inf`},
		{`cjson.encode(print)`, `error: Cannot serialise function: type not supported`},
		{`cjson.encode(cjson.null)`, `null`},
		{`cjson.encode()`, `error: bad argument #1 to 'encode' (expected 1 argument)`},
		{`cjson.decode('x')`, `error: Expected value but found invalid token at character 1`},
		{`cjson.decode('[1,2')`, `error: Expected comma or array end but found T_END at character 5`},
		{`cjson.decode('{"a" 1}')`, `error: Expected colon but found T_NUMBER at character 6`},
		{`cjson.decode('"\\ud83d"')`, `error: Expected value but found invalid unicode escape code at character 2`},
		{`cjson.decode('"\\ud83d\\ude00"')`, "\U0001F600"},
		{`cjson.decode('"\\u00e9\\/"')`, "é/"},
		{`cjson.decode('null') == cjson.null`, `true`},
		{`cjson.decode('0x10')`, `16`},
		{`cjson.decode('12\0junk')`, `12`},
		{`cjson.decode('\0a')`, `error: JSON parser does not support UTF-16 or UTF-32`},
		{`cjson.decode(string.rep('[', 1001) .. string.rep(']', 1001))`, `error: Found too many nested data structures (1001) at character 1001`},
		{`cjson.encode_number_precision(20)`, `error: bad argument #1 to 'encode_number_precision' (expected integer between 1 and 14)`},
		{`cjson.encode_invalid_numbers('null')`, `null`},
		{`hex(cmsgpack.pack(1, -1, 200, -200, 70000))`, `01ffccc8d1ff38ce00011170`},
		{`hex(cmsgpack.pack(1.5, 0.1))`, `ca3fc00000cb3fb999999999999a`},
		{`hex(cmsgpack.pack({1, 2}, {a = true}, 'xy', nil))`, `920102` + `81a161c3` + `a27879` + `c0`},
		{`hex(cmsgpack.pack(2^63))`, `ca5f000000`},
		{`hex(cmsgpack.pack(-2^63))`, `d38000000000000000`},
		{`cmsgpack.pack()`, `error: bad argument #0 to 'pack' (MessagePack pack needs input.)`},
		{`repr({cmsgpack.unpack('\1\2\147\1\2\3')})`, `{n:1=n:1,n:2=n:2,n:3={n:1=n:1,n:2=n:2,n:3=n:3}}`},
		{`repr({cmsgpack.unpack_one('\1\2')})`, `{n:1=n:1,n:2=n:1}`},
		{`repr({cmsgpack.unpack_limit('\1\2', 5)})`, `{n:1=n:-1,n:2=n:1,n:3=n:2}`},
		{`repr({cmsgpack.unpack('\207\255\255\255\255\255\255\255\255')})`, `{n:1=n:-1}`},
		{`cmsgpack.unpack('\204')`, `error: Missing bytes in input.`},
		{`cmsgpack.unpack('\193')`, `error: Bad data format in input.`},
		{`cmsgpack.unpack('\129\192\1')`, `error: table index is nil`},
		{`bit.tobit(2^32 + 5)`, `5`},
		{`bit.tobit(2.5)`, `2`},
		{`bit.tobit(3.5)`, `4`},
		{`bit.bnot(0)`, `-1`},
		{`bit.band(0xff, 0x0f, 0x3)`, `3`},
		{`bit.lshift(1, 31)`, `-2147483648`},
		{`bit.rshift(-1, 28)`, `15`},
		{`bit.arshift(-256, 4)`, `-16`},
		{`bit.rol(0x12345678, 4)`, `591751041`},
		{`bit.bswap(0x12345678)`, `2018915346`},
		{`bit.tohex(65535, -3)`, `FFF`},
		{`bit.tohex(-1)`, `ffffffff`},
		{`bit.tobit('x')`, `error: bad argument #1 to 'tobit' (number expected, got string)`},
		{`hex(struct.pack('>i', 1))`, `00000001`},
		{`hex(struct.pack('<h', -2))`, `feff`},
		{`hex(struct.pack('<i16', -1))`, `ffffffffffffffff0000000000000000`},
		{`hex(struct.pack('!4 b i', 1, 2))`, `0100000002000000`},
		{`hex(struct.pack('c0 s', 'ab', 'cd'))`, `6162636400`},
		{`struct.pack('c5', 'ab')`, `error: bad argument #3 to 'pack' (string too short)`},
		{`struct.pack('z', 1)`, `error: bad argument #1 to 'pack' (invalid format option 'z')`},
		{`repr({struct.unpack('>I b c0', '\0\0\0\1\2abc')})`, `{n:1=n:1,n:2=s:ab,n:3=n:8}`},
		{`repr({struct.unpack('s', 'hi\0x')})`, `{n:1=s:hi,n:2=n:4}`},
		{`struct.unpack('i', 'ab')`, `error: bad argument #2 to 'unpack' (data string too short)`},
		{`struct.size('!4 b i c3')`, `11`},
		{`struct.size('s')`, `error: bad argument #1 to 'size' (option 's' has no fixed size)`},
	}
	for _, c := range cases {
		if got := evalString(t, c.expr); got != c.want {
			t.Errorf("%s\n got: %q\nwant: %q", c.expr, got, c.want)
		}
	}
}

func TestNullIsPerState(t *testing.T) {
	L1, L2 := lua.NewState(), lua.NewState()
	defer L1.Close()
	defer L2.Close()
	Open(L1)
	Open(L2)
	n1 := L1.GetGlobal("cjson").(*lua.LTable).RawGetString("null")
	n2 := L2.GetGlobal("cjson").(*lua.LTable).RawGetString("null")
	if !IsNull(n1) || !IsNull(n2) {
		t.Fatal("cjson.null is not recognised by IsNull")
	}
	if n1 == n2 {
		t.Fatal("two states share one cjson.null")
	}
	for _, v := range []lua.LValue{lua.LNil, lua.LFalse, lua.LString("null"), L1.NewUserData(), L1.NewTable()} {
		if IsNull(v) {
			t.Errorf("IsNull(%v) = true", v)
		}
	}
	// Every null a state decodes is its cjson.null, also through cjson.new().
	if err := L1.DoString(`assert(cjson.decode('[null]')[1] == cjson.null)
		assert(cjson.new().decode('null') == cjson.null)`); err != nil {
		t.Fatal(err)
	}
}

func TestSettingsArePerModule(t *testing.T) {
	L1, L2 := lua.NewState(), lua.NewState()
	defer L1.Close()
	defer L2.Close()
	Open(L1)
	Open(L2)
	if err := L1.DoString(`cjson.encode_max_depth(1)`); err != nil {
		t.Fatal(err)
	}
	if err := L1.DoString(`cjson.encode({{}})`); err == nil {
		t.Error("encode_max_depth(1) did not limit its own state")
	}
	if err := L2.DoString(`assert(cjson.encode({{}}) == '[{}]')`); err != nil {
		t.Errorf("another state was affected: %v", err)
	}
	if err := L1.DoString(`assert(cjson.new().encode({{}}) == '[{}]')`); err != nil {
		t.Errorf("cjson.new() did not start from the defaults: %v", err)
	}
}

func TestOpenOne(t *testing.T) {
	for name, open := range map[string]func(*lua.LState){
		"cjson": OpenCJSON, "cmsgpack": OpenCmsgpack, "bit": OpenBit, "struct": OpenStruct,
	} {
		L := lua.NewState()
		open(L)
		for _, other := range []string{"cjson", "cmsgpack", "bit", "struct"} {
			_, isTable := L.GetGlobal(other).(*lua.LTable)
			if isTable != (other == name) {
				t.Errorf("after Open of %s, global %s is a table: %v", name, other, isTable)
			}
		}
		L.Close()
	}
}

// TestConcurrentStates runs the libraries in several states at once; with
// -race it shows that they share nothing mutable.
func TestConcurrentStates(t *testing.T) {
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			L := lua.NewState()
			defer L.Close()
			Open(L)
			script := fmt.Sprintf(`
				cjson.encode_number_precision(%d)
				for i = 1, 200 do
					local s = cjson.encode({i, i / 7, 'x'})
					local t = cjson.decode(s)
					assert(t[1] == i and t[3] == 'x')
					assert(cmsgpack.unpack(cmsgpack.pack(t))[1] == i)
					assert(bit.band(i, 0xff) == i %% 256)
					assert(struct.unpack('>i', struct.pack('>i', -i)) == -i)
				end
				assert(cjson.encode_number_precision() == %d)`, g+3, g+3)
			if err := L.DoString(script); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
