package persistence

import (
	"bytes"
	"encoding/binary"
	"math"
	"strings"
	"testing"

	"github.com/turnstile/turnstile/shards"
)

// sampleEffects covers every op and entry kind, with edge values.
func sampleEffects() []Effect {
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
	return []Effect{
		{Op: OpSet, DB: 0, Key: []byte("k"), Entry: shards.IntEntry(0, 0)},
		{Op: OpSet, DB: 0, Key: []byte(""), Entry: shards.Entry{Kind: shards.KindBytes, Str: []byte("")}},
		{Op: OpSet, DB: 1, Key: []byte("min"), Entry: shards.IntEntry(math.MinInt64, 1)},
		{Op: OpSet, DB: 15, Key: []byte("max"), Entry: shards.IntEntry(math.MaxInt64, math.MaxInt64)},
		{Op: OpSet, DB: maxDB, Key: []byte("neg"), Entry: shards.IntEntry(-1, math.MinInt64)},
		{Op: OpSet, DB: 2, Key: []byte("bytes"), Entry: shards.Entry{Kind: shards.KindBytes, Str: []byte("hello\x00world\xff"), Exp: 1_700_000_000_123_456_789}},
		{Op: OpSet, DB: 3, Key: big[:70000], Entry: shards.Entry{Kind: shards.KindBytes, Str: big}},
		{Op: OpSet, DB: 0, Key: []byte("canonical-looking"), Entry: shards.Entry{Kind: shards.KindBytes, Str: []byte("123")}},
		{Op: OpDel, DB: 0, Key: []byte("k")},
		{Op: OpDel, DB: 7, Key: []byte("")},
		{Op: OpFlushDB, DB: 9},
		{Op: OpFlushAll},
		{Op: OpRange, DB: 4, Key: []byte("r"), Off: 5, Len: 10, Entry: shards.Entry{Kind: shards.KindBytes, Str: []byte("abc")}},
		{Op: OpRange, DB: 0, Key: []byte("pad"), Off: 1 << 20, Len: 1<<20 + 1, Entry: shards.Entry{Kind: shards.KindBytes, Str: []byte("x")}},
		{Op: OpRange, DB: 1, Key: []byte("cut"), Off: 0, Len: 0, Entry: shards.Entry{Kind: shards.KindBytes, Str: []byte{}}},
		{Op: OpRange, DB: 2, Key: []byte("end"), Off: MaxPayload - 1, Len: MaxPayload, Entry: shards.Entry{Kind: shards.KindBytes, Str: []byte("z")}},
	}
}

func effectsEqual(a, b Effect) bool {
	return a.Op == b.Op && a.DB == b.DB && bytes.Equal(a.Key, b.Key) && entriesEqual(a.Entry, b.Entry) &&
		a.Off == b.Off && a.Len == b.Len
}

func entriesEqual(a, b shards.Entry) bool {
	return a.Kind == b.Kind && a.Int == b.Int && bytes.Equal(a.Str, b.Str) && a.Exp == b.Exp
}

func TestRecordRoundTrip(t *testing.T) {
	var buf []byte
	effs := sampleEffects()
	for i := range effs {
		buf = appendRecord(buf, &effs[i])
	}
	buf = appendEndRecord(buf, 12345)
	for i, want := range effs {
		var got Effect
		n, m, err := decodeRecord(buf, &got)
		if err != nil || m.kind != recEffect {
			t.Fatalf("record %d: %v (%+v)", i, err, m)
		}
		if !effectsEqual(got, want) {
			t.Fatalf("record %d: got %+v, want %+v", i, got, want)
		}
		buf = buf[n:]
	}
	var e Effect
	n, m, err := decodeRecord(buf, &e)
	if err != nil || m.kind != recEnd || m.count != 12345 || n != len(buf) {
		t.Fatalf("end record: n=%d %+v err=%v", n, m, err)
	}
}

func TestCRC8CheckValue(t *testing.T) {
	// CRC-8/SMBUS check value from the CRC catalogue.
	if got := crc8([]byte("123456789")); got != 0xF4 {
		t.Fatalf("crc8 check = %#x, want 0xf4", got)
	}
	if got := crc32c([]byte("123456789")); got != 0xE3069283 {
		t.Fatalf("crc32c check = %#x, want 0xe3069283", got)
	}
}

func TestHeader(t *testing.T) {
	for _, ft := range []FileType{FileDump, FileIncr} {
		h := appendHeader(nil, ft)
		if len(h) != headerLen {
			t.Fatalf("header length %d", len(h))
		}
		if got, reason := parseHeader(h); reason != "" || got != ft {
			t.Fatalf("parse: %v %q", got, reason)
		}
		for bit := 0; bit < headerLen*8; bit++ {
			h2 := bytes.Clone(h)
			h2[bit/8] ^= 1 << (bit % 8)
			if _, reason := parseHeader(h2); reason == "" {
				t.Fatalf("flipped header bit %d not detected", bit)
			}
		}
	}
	// Valid checksum over a bad version, type or reserved bytes.
	for _, mod := range []func([]byte){
		func(h []byte) { h[8] = 5 },
		func(h []byte) { h[8] = 0 },
		func(h []byte) { h[9] = 3 },
		func(h []byte) { h[10] = 1 },
	} {
		h := appendHeader(nil, FileIncr)
		mod(h)
		binary.LittleEndian.PutUint32(h[12:], crc32c(h[:12]))
		if _, reason := parseHeader(h); reason == "" {
			t.Fatalf("bad header accepted: %x", h)
		}
	}
}

// TestDecodePayloadRejects feeds payloads with valid framing but bad content.
func TestDecodePayloadRejects(t *testing.T) {
	cases := map[string][]byte{
		"empty":         {},
		"op 0":          {0, 0, 0},
		"op 5":          {5, 0, 0},
		"op 31":         {31, 0, 0},
		"op 0xfe":       {0xfe, 0, 0},
		"no db":         {opcodeDel},
		"db too big":    binary.AppendUvarint([]byte{opcodeDel}, maxDB+1),
		"key too long":  {opcodeDel, 0, 5, 'a'},
		"trailing":      {opcodeDel, 0, 1, 'a', 'x'},
		"no kind":       {opcodeSet, 0, 1, 'a'},
		"kind 0":        {opcodeSet, 0, 1, 'a', 0, 0, 0},
		"kind 3":        {opcodeSet, 0, 1, 'a', 3, 0, 0},
		"kind 0xff":     {opcodeSet, 0, 1, 'a', 0xff, 0, 0},
		"no int":        {opcodeSet, 0, 1, 'a', 1},
		"value too big": {opcodeSet, 0, 1, 'a', 2, 9, 'x', 0},
		"no exp":        {opcodeSet, 0, 1, 'a', 1, 2},
		"after exp":     {opcodeSet, 0, 1, 'a', 1, 2, 0, 0},
		"end no count":  {opcodeEnd},
		"end trailing":  {opcodeEnd, 1, 1},
		// RANGE: db, key, offset, length, data
		"range no off":        {opcodeRange, 0, 1, 'a'},
		"range no len":        {opcodeRange, 0, 1, 'a', 0},
		"range no data":       {opcodeRange, 0, 1, 'a', 0, 1},
		"range data short":    {opcodeRange, 0, 1, 'a', 0, 3, 2, 'x'},
		"range data trailing": {opcodeRange, 0, 1, 'a', 0, 3, 1, 'x', 'y'},
		"range past length":   {opcodeRange, 0, 1, 'a', 2, 3, 2, 'x', 'y'},
		"range huge length":   binary.AppendUvarint([]byte{opcodeRange, 0, 1, 'a', 0}, MaxPayload+1),
		"range huge offset":   binary.AppendUvarint([]byte{opcodeRange, 0, 1, 'a'}, MaxPayload+1),
	}
	for name, p := range cases {
		var e Effect
		if _, reason := decodePayload(p, &e); reason == "" {
			t.Errorf("%s: accepted %x", name, p)
		}
	}
}

func TestAppendPanicsOnBadEffect(t *testing.T) {
	l, _ := openMem(t, FsyncNo)
	for _, e := range []Effect{
		{Op: 0},
		{Op: 9},
		{Op: OpDel, DB: -1},
		{Op: OpSet, Key: []byte("k"), Entry: shards.Entry{Kind: 7}},
		{Op: OpRange, Key: []byte("k"), Off: -1, Len: 1},
		{Op: OpRange, Key: []byte("k"), Off: 1, Len: 2, Entry: shards.Entry{Str: []byte("xy")}},
		{Op: OpRange, Key: []byte("k"), Off: 0, Len: MaxPayload + 1},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Append(%+v) did not panic", e)
				}
			}()
			l.Append(e)
		}()
	}
	// The lock is not left held by a panic.
	l.Append(Effect{Op: OpDel, Key: []byte("x")})
}

func TestCorruptErrorMessage(t *testing.T) {
	err := &CorruptError{File: "/d/a.1.incr", Offset: 42, Reason: "record checksum mismatch"}
	if s := err.Error(); !strings.Contains(s, "/d/a.1.incr") || !strings.Contains(s, "42") {
		t.Fatal(s)
	}
}

// TestFlushIgnoredFields: fields a flush ignores are written as zero values.
func TestFlushIgnoredFields(t *testing.T) {
	for _, c := range []struct{ in, want Effect }{
		{Effect{Op: OpFlushDB, DB: 4, Key: []byte("x")}, Effect{Op: OpFlushDB, DB: 4}},
		{Effect{Op: OpFlushAll, DB: 4, Key: []byte("x")}, Effect{Op: OpFlushAll}},
	} {
		rec := appendRecord(nil, &c.in)
		var got Effect
		if _, _, err := decodeRecord(rec, &got); err != nil || !effectsEqual(got, c.want) {
			t.Fatalf("%+v: got %+v, %v", c.in, got, err)
		}
		if want := appendRecord(nil, &c.want); !bytes.Equal(rec, want) {
			t.Fatalf("%+v encodes differently from %+v", c.in, c.want)
		}
	}
}
