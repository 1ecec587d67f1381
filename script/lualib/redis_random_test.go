package lualib

import (
	"context"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	lua "github.com/yuin/gopher-lua"
)

// TestRedisRandomDifferential feeds generated inputs (seeded, so every run
// is the same) through Redis and gopher-lua: JSON-like texts to
// cjson.decode, msgpack-like bytes to cmsgpack.unpack, random doubles to
// the number paths of all four libraries, and random struct formats. Inputs
// travel as ARGV so no quoting is involved; results are compared with repr,
// which does not depend on table order.
func TestRedisRandomDifferential(t *testing.T) {
	addr := startRedis(t)
	ctx := context.Background()
	client := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, ReadTimeout: 10 * time.Second})
	defer client.Close()
	rng := rand.New(rand.NewPCG(11, 7))

	type check struct {
		script string
		input  func() []string
		count  int
	}
	checks := []check{
		{`repr(cjson.decode(ARGV[1]))`, func() []string { return []string{randomJSON(rng)} }, 1000},
		{`repr({cmsgpack.unpack(ARGV[1])})`, func() []string { return []string{randomMsgpack(rng)} }, 1000},
		// Encoding, compared after decoding again (key order aside).
		{`repr(cjson.decode(cjson.encode(cjson.decode(ARGV[1]))))`,
			func() []string { return []string{validJSON(rng, 0)} }, 300},
		{`repr({pcall(function() return cmsgpack.unpack(cmsgpack.pack(cmsgpack.unpack(ARGV[1]))) end)})`,
			func() []string { return []string{randomMsgpack(rng)} }, 300},
		{`(function() local x = struct.unpack('>d', ARGV[1])
			local ok, j = pcall(cjson.encode, x)
			return table.concat({bit.tobit(x), bit.tohex(x), hex(cmsgpack.pack(x)),
				hex(struct.pack('>l', x)), hex(struct.pack('<I4', x)), hex(struct.pack('f', x)),
				tostring(ok), j}, ' ') end)()`,
			func() []string { return []string{randomDoubleBytes(rng)} }, 1000},
		{`repr({pcall(struct.unpack, ARGV[1], ARGV[2])})`,
			func() []string { return []string{randomStructFormat(rng), randomBytes(rng, 24)} }, 300},
		{`repr({pcall(struct.size, ARGV[1])})`, func() []string { return []string{randomStructFormat(rng)} }, 150},
	}
	deadline := time.Now().Add(2 * time.Minute)
	for _, c := range checks {
		script := diffScript(c.script)
		errs, distinct := 0, map[string]bool{}
		for i := 0; i < c.count; i++ {
			if time.Now().After(deadline) {
				t.Fatal("out of time")
			}
			args := c.input()
			want := redisEvalArgs(ctx, client, script, args)
			got := gopherEvalArgs(script, args)
			if !reflect.DeepEqual(want, got) {
				t.Errorf("%s with ARGV %q\n redis: %s\n  ours: %s", c.script, args, show(want), show(got))
			}
			if _, isErr := want.(evalError); isErr {
				errs++
			} else {
				distinct[show(want)] = true
			}
		}
		// The generators must reach both errors and many distinct results,
		// or the comparison says little.
		t.Logf("%d inputs: %d errors, %d distinct results: %.60s", c.count, errs, len(distinct), c.script)
		if len(distinct) < c.count/10 {
			t.Errorf("only %d distinct results for %s", len(distinct), c.script)
		}
	}
}

func redisEvalArgs(ctx context.Context, c *redis.Client, script string, args []string) any {
	argv := make([]any, len(args))
	for i, a := range args {
		argv[i] = a
	}
	v, err := c.Eval(ctx, script, nil, argv...).Result()
	return redisResult(v, err)
}

func gopherEvalArgs(script string, args []string) any {
	return gopherEvalWith(script, func(L *lua.LState) {
		argv := L.NewTable()
		for _, a := range args {
			argv.Append(lua.LString(a))
		}
		L.SetGlobal("ARGV", argv)
	})
}

// jsonPieces are the fragments randomJSON strings together: tokens of every
// kind, lua-cjson's extensions, broken escapes and stray bytes.
var jsonPieces = []string{
	"{", "}", "[", "]", ",", ":", " ", "\n", `"a"`, `"k"`, `""`, `"\u00e9"`, `"\ud83d\ude00"`,
	`"\ud83d"`, `"\u12"`, `"\x"`, `"\/\b"`, `"open`, "0", "-0", "1", "12", "1.5", "-2e3", "1e", "0x1F",
	"+1", "01", ".5", "1.", "inf", "-Infinity", "nan", "NaN", "true", "false", "null", "nul", "x",
	"\x00", "\t", "1e400", "\xff",
}

// randomJSON is either a random valid JSON value or a string of pieces.
func randomJSON(rng *rand.Rand) string {
	if rng.IntN(2) == 0 {
		return validJSON(rng, 0)
	}
	var b strings.Builder
	for n := 1 + rng.IntN(10); n > 0; n-- {
		b.WriteString(jsonPieces[rng.IntN(len(jsonPieces))])
	}
	return b.String()
}

func validJSON(rng *rand.Rand, depth int) string {
	kind := rng.IntN(8)
	if depth >= 4 {
		kind %= 5
	}
	switch kind {
	case 0:
		return strconv.FormatFloat((rng.Float64()-0.5)*math.Pow(10, float64(rng.IntN(40)-20)), 'g', -1, 64)
	case 1:
		return strconv.Itoa(rng.IntN(2000) - 1000)
	case 2:
		return []string{`"abc"`, `"\u00e9\n"`, `"\ud834\udd1e"`, `""`, `"a\/b"`}[rng.IntN(5)]
	case 3:
		return []string{"true", "false"}[rng.IntN(2)]
	case 4:
		return "null"
	case 5, 6:
		parts := make([]string, rng.IntN(4))
		for i := range parts {
			parts[i] = validJSON(rng, depth+1)
		}
		return "[" + strings.Join(parts, ",") + "]"
	}
	parts := make([]string, rng.IntN(4))
	for i := range parts {
		parts[i] = `"k` + strconv.Itoa(rng.IntN(3)) + `":` + validJSON(rng, depth+1)
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// randomMsgpack is a random msgpack value, sometimes cut short or with a
// byte changed.
func randomMsgpack(rng *rand.Rand) string {
	b := msgpackValue(rng, nil, 0)
	switch rng.IntN(4) {
	case 0:
		if len(b) > 0 {
			b = b[:rng.IntN(len(b))]
		}
	case 1:
		if len(b) > 0 {
			b[rng.IntN(len(b))] = byte(rng.IntN(256))
		}
	}
	return string(b)
}

func msgpackValue(rng *rand.Rand, b []byte, depth int) []byte {
	kind := rng.IntN(12)
	if depth >= 3 {
		kind %= 9
	}
	switch kind {
	case 0:
		return append(b, byte(rng.IntN(256))) // any first byte, fixints included
	case 1: // uint 8..64 (0xcc..0xcf) or int 8..64 (0xd0..0xd3)
		tag := 0xcc + byte(rng.IntN(4)) + 4*byte(rng.IntN(2))
		b = append(b, tag)
		for range 1 << (tag & 3) {
			b = append(b, byte(rng.IntN(256)))
		}
		return b
	case 2:
		return binary.BigEndian.AppendUint64(append(b, 0xd3), rng.Uint64())
	case 3:
		return binary.BigEndian.AppendUint64(append(b, 0xcf), rng.Uint64())
	case 4:
		return binary.BigEndian.AppendUint32(append(b, 0xca), rng.Uint32())
	case 5:
		return binary.BigEndian.AppendUint64(append(b, 0xcb), rng.Uint64())
	case 6:
		s := randomBytes(rng, 40)
		return appendMsgpackString(b, s)
	case 7:
		return append(b, 0xc0+byte(rng.IntN(4)))
	case 8:
		return append(b, 0xd9+byte(rng.IntN(3)), 0, 2, 'h', 'i')
	case 9, 10:
		n := rng.IntN(5)
		b = appendMsgpackHeader(b, 0x90, 0xdc, 0xdd, uint64(n))
		for range n {
			b = msgpackValue(rng, b, depth+1)
		}
		return b
	}
	n := rng.IntN(4)
	b = appendMsgpackHeader(b, 0x80, 0xde, 0xdf, uint64(n))
	for range n {
		b = append(b, byte(rng.IntN(0x100))&0x7f) // small integer keys only
		b = msgpackValue(rng, b, depth+1)
	}
	return b
}

// randomDoubleBytes is a big-endian double: integers, halves, powers of two,
// extremes, NaNs and random bit patterns.
func randomDoubleBytes(rng *rand.Rand) string {
	var f float64
	switch rng.IntN(6) {
	case 0:
		f = float64(rng.Int64N(1<<40) - 1<<39)
	case 1:
		f = float64(rng.IntN(100)-50) + 0.5
	case 2:
		f = math.Ldexp(1, rng.IntN(140)-70) * float64(rng.IntN(3)-1)
	case 3:
		f = []float64{math.Inf(1), math.Inf(-1), math.MaxFloat64, 5e-324, 0x1p63, -0x1p63, 0x1p64, 0x1p31, 0x1p32 - 1}[rng.IntN(9)]
	case 4:
		return string(binary.BigEndian.AppendUint64(nil, 0x7ff0000000000000|rng.Uint64()|1)) // NaNs
	default:
		return string(binary.BigEndian.AppendUint64(nil, rng.Uint64()))
	}
	return string(binary.BigEndian.AppendUint64(nil, math.Float64bits(f)))
}

func randomStructFormat(rng *rand.Rand) string {
	const opts = "<>!  xbBhHlLTiIfdcsz0123456789"
	var b strings.Builder
	for n := rng.IntN(6); n >= 0; n-- {
		b.WriteByte(opts[rng.IntN(len(opts))])
	}
	return b.String()
}

func randomBytes(rng *rand.Rand, max int) string {
	b := make([]byte, rng.IntN(max+1))
	for i := range b {
		b[i] = byte(rng.IntN(256))
	}
	return string(b)
}
