package persistence

import (
	"bytes"
	"strings"
	"testing"

	"github.com/turnstile/turnstile/shards"
)

func TestEffectsRoundTrip(t *testing.T) {
	want := sampleEffects()
	var b []byte
	for i := range want {
		b = AppendEffect(b, &want[i])
	}
	var got []Effect
	err := DecodeEffects(b, func(e *Effect) error {
		got = append(got, *e)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("decoded %d effects, want %d", len(got), len(want))
	}
	for i := range want {
		if g, w := AppendEffect(nil, &got[i]), AppendEffect(nil, &want[i]); !bytes.Equal(g, w) {
			t.Errorf("effect %d: decoded %+v, want %+v", i, got[i], want[i])
		}
	}
	// Any cut or flipped byte is an error, never a silent loss (on the
	// small effects: the large ones would make this quadratic loop slow).
	b = b[:0]
	for i := range want {
		if len(want[i].Key)+len(want[i].Entry.Str) < 1000 {
			b = AppendEffect(b, &want[i])
		}
	}
	for cut := 1; cut < len(b); cut++ {
		if err := DecodeEffects(b[:cut], func(*Effect) error { return nil }); err == nil && !boundary(b, cut) {
			t.Fatalf("cut at %d decoded without error", cut)
		}
	}
	c := make([]byte, len(b))
	for i := range b {
		copy(c, b)
		c[i] ^= 0x40
		if err := DecodeEffects(c, func(*Effect) error { return nil }); err == nil {
			t.Fatalf("flipped byte %d decoded without error", i)
		}
	}
}

// boundary reports whether cut falls between two records of b.
func boundary(b []byte, cut int) bool {
	n := 0
	for off := 0; off < len(b); {
		if off == cut {
			return true
		}
		l := int(b[off]) | int(b[off+1])<<8 | int(b[off+2])<<16 | int(b[off+3])<<24
		off += recHeaderLen + l
		n++
	}
	return false
}

func TestDumpStreamRoundTrip(t *testing.T) {
	keys := map[string]string{"a": "1", "b": "", "c": strings.Repeat("x", 5000)}
	var buf bytes.Buffer
	n, size, err := WriteDump(&buf, func(emit EmitFunc) error {
		for k, v := range keys {
			if err := emit(2, []byte(k), shards.Entry{Kind: shards.KindBytes, Str: []byte(v), Exp: 7}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil || n != 3 || size != int64(buf.Len()) {
		t.Fatalf("WriteDump = %d keys, %d bytes, %v; buffer holds %d", n, size, err, buf.Len())
	}
	full := buf.Bytes()
	buf.WriteString("trailing bytes belong to the container")
	got := map[string]string{}
	info, err := ReadDump(&buf, "stream", func(db int, k []byte, e shards.Entry) error {
		if db != 2 || e.Exp != 7 {
			t.Errorf("key %q: db %d exp %d", k, db, e.Exp)
		}
		got[string(k)] = string(e.Str)
		return nil
	})
	if err != nil || info.Records != 3 || info.Bytes != int64(len(full)) {
		t.Fatalf("ReadDump = %+v, %v", info, err)
	}
	for k, v := range keys {
		if got[k] != v {
			t.Errorf("key %q = %q, want %q", k, got[k], v)
		}
	}
	for _, cut := range []int{0, 10, headerLen, headerLen + 5, len(full) - 1} {
		if _, err := ReadDump(bytes.NewReader(full[:cut]), "stream", func(int, []byte, shards.Entry) error { return nil }); err == nil {
			t.Errorf("dump cut at %d of %d read without error", cut, len(full))
		}
	}
}

// FuzzDecodeEffects: arbitrary bytes never panic the decoder, and whatever
// decodes re-encodes to the same bytes.
func FuzzDecodeEffects(f *testing.F) {
	effs := sampleEffects()
	for i := range effs {
		if len(effs[i].Key)+len(effs[i].Entry.Str) < 1000 {
			f.Add(AppendEffect(nil, &effs[i]))
		}
	}
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		var again []byte
		err := DecodeEffects(b, func(e *Effect) error {
			again = AppendEffect(again, e)
			return nil
		})
		if err == nil && !bytes.Equal(again, b) {
			t.Fatalf("decoded %x re-encodes as %x", b, again)
		}
	})
}
