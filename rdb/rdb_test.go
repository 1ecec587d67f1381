package rdb

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// describe prints a value compactly for comparisons.
func describe(v Value) string {
	var parts []string
	switch v.Type {
	case String:
		return fmt.Sprintf("String %q", v.Str)
	case List, Set:
		for _, e := range v.Elems {
			parts = append(parts, fmt.Sprintf("%q", e))
		}
	case Hash:
		for _, p := range v.Pairs {
			parts = append(parts, fmt.Sprintf("%q %q", p[0], p[1]))
		}
	case ZSet:
		for _, m := range v.ZMembers {
			parts = append(parts, fmt.Sprintf("%v %q", m.Score, m.Member))
		}
	case TypeStream: // all but First, which the encoder derives
		st := v.Stream
		for _, e := range st.Entries {
			parts = append(parts, fmt.Sprintf("%d-%d %q", e.ID.Ms, e.ID.Seq, e.Fields))
		}
		parts = append(parts, fmt.Sprintf("last=%v maxdel=%v added=%d", st.Last, st.MaxDeleted, st.EntriesAdded))
		for _, g := range st.Groups {
			parts = append(parts, fmt.Sprintf("group %q last=%v read=%d pel=%v", g.Name, g.Last, g.EntriesRead, g.PEL))
			for _, c := range g.Consumers {
				parts = append(parts, fmt.Sprintf("consumer %q seen=%d pel=%v", c.Name, c.Seen, c.PEL))
			}
		}
	}
	name := map[Type]string{List: "List", Set: "Set", Hash: "Hash", ZSet: "ZSet", TypeStream: "Stream"}[v.Type]
	return name + " [" + strings.Join(parts, " ") + "]"
}

// TestDecodeRedisPayloads decodes redis-server 7.0.15's payloads of every
// encoding (listpack, quicklist, intset, LZF strings, ...).
func TestDecodeRedisPayloads(t *testing.T) {
	for _, g := range goldenPayloads {
		p, err := hex.DecodeString(g.hex)
		if err != nil {
			t.Fatal(err)
		}
		v, err := Decode(p)
		if err != nil {
			t.Errorf("%s (%s): %v", g.name, g.encoding, err)
			continue
		}
		if g.want != "" && describe(v) != g.want {
			t.Errorf("%s (%s):\n got  %s\n want %s", g.name, g.encoding, describe(v), g.want)
		}
		// Re-encoding in the plain encodings keeps the value.
		again, err := Decode(encodeValue(v))
		if err != nil || describe(again) != describe(v) {
			t.Errorf("%s: round trip: %v\n got  %s\n want %s", g.name, err, describe(again), describe(v))
		}
	}
}

// encodeValue writes v with the Encoder.
func encodeValue(v Value) []byte {
	switch v.Type {
	case String:
		return EncodeString(v.Str)
	case TypeStream:
		return EncodeStream(v.Stream)
	}
	var e Encoder
	switch v.Type {
	case List, Set:
		e.Begin(v.Type, len(v.Elems))
		for _, x := range v.Elems {
			e.Str(x)
		}
	case Hash:
		e.Begin(v.Type, len(v.Pairs))
		for _, p := range v.Pairs {
			e.Str(p[0])
			e.Str(p[1])
		}
	case ZSet:
		e.Begin(v.Type, len(v.ZMembers))
		for _, m := range v.ZMembers {
			e.Str(m.Member)
			e.Score(m.Score)
		}
	}
	return e.Finish()
}

// TestEncodeStringAsRedis: a string's payload is byte for byte Redis's
// for the integer encodings and short plain strings.
func TestEncodeStringAsRedis(t *testing.T) {
	for _, g := range goldenPayloads {
		if !strings.HasPrefix(g.name, "s:") || g.name == "s:lzf" {
			continue
		}
		p, _ := hex.DecodeString(g.hex)
		v, err := Decode(p)
		if err != nil {
			t.Fatal(err)
		}
		if got := EncodeString(v.Str); !bytes.Equal(got, p) {
			t.Errorf("%s: got %x, want %x", g.name, got, p)
		}
	}
}

// TestDecodeRejects: a bad footer is ErrChecksum, a bad value ErrFormat.
func TestDecodeRejects(t *testing.T) {
	good := EncodeString([]byte("hello"))
	flip := bytes.Clone(good)
	flip[len(flip)-1] ^= 1
	newer := bytes.Clone(good)
	newer[len(newer)-10] = maxVersion + 1
	for name, p := range map[string][]byte{"short": good[:9], "checksum": flip, "version": newer} {
		if _, err := Decode(p); !errors.Is(err, ErrChecksum) {
			t.Errorf("%s: %v, want ErrChecksum", name, err)
		}
	}
	var e Encoder
	e.b = []byte{typeSet, 2, 1, 'a', 1, 'a'} // a member twice
	for name, p := range map[string][]byte{"duplicate": e.Finish(), "empty set": (&Encoder{b: []byte{typeSet, 0}}).Finish(),
		"unknown type":        (&Encoder{b: []byte{99}}).Finish(),
		"LZF claiming 2 GiB":  (&Encoder{b: []byte{typeString, 0xc3, 2, 0x80, 0x80, 0, 0, 0, 0, 'a'}}).Finish(),
		"set of 2^32 members": (&Encoder{b: []byte{typeSet, 0x80, 0xff, 0xff, 0xff, 0xff, 1, 'a'}}).Finish(), "truncated": (&Encoder{b: []byte{typeString, 5, 'a'}}).Finish()} {
		if _, err := Decode(p); !errors.Is(err, ErrFormat) {
			t.Errorf("%s: %v, want ErrFormat", name, err)
		}
	}
}

// FuzzDecode: Decode never panics, and what it accepts survives a round
// trip through the Encoder.
func FuzzDecode(f *testing.F) {
	for _, g := range goldenPayloads {
		p, _ := hex.DecodeString(g.hex)
		f.Add(p)
		f.Add(p[:len(p)-10]) // the body alone: the fuzzer's mutations get a fresh footer below
	}
	f.Fuzz(func(t *testing.T, p []byte) {
		for _, payload := range [][]byte{p, (&Encoder{b: bytes.Clone(p)}).Finish()} {
			v, err := Decode(payload)
			if err != nil {
				continue
			}
			again, err := Decode(encodeValue(v))
			if err != nil || describe(again) != describe(v) {
				t.Fatalf("round trip of %x: %v\n got  %s\n want %s", payload, err, describe(again), describe(v))
			}
		}
	})
}
