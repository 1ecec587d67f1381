package coll

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/turnstile/turnstile/shards"
)

// TestHashMatchesMap drives a hash through both forms and checks every
// read against a plain map, and the persistent form round trip.
func TestHashMatchesMap(t *testing.T) {
	for _, valLen := range []int{1, 100} { // 100 > maxPackedValue: big at once
		h := NewHash()
		ref := map[string]string{}
		for i := 0; i < 1200; i++ {
			f := fmt.Sprintf("f%d", i%700)
			v := bytes.Repeat([]byte{byte('a' + i%26)}, valLen)
			n, changed, err := Apply(h, OpHSet, [][]byte{[]byte(f), v})
			_, existed := ref[f]
			if err != nil || !changed || (n == 1) == existed {
				t.Fatalf("HSET %s: n=%d changed=%v err=%v existed=%v", f, n, changed, err, existed)
			}
			ref[f] = string(v)
			if i%7 == 0 {
				d := fmt.Sprintf("f%d", (i*3)%700)
				n, _, _ := Apply(h, OpHDel, [][]byte{[]byte(d)})
				if _, ok := ref[d]; (n == 1) != ok {
					t.Fatalf("HDEL %s: n=%d", d, n)
				}
				delete(ref, d)
			}
		}
		if h.Len() != len(ref) {
			t.Fatalf("len %d, want %d", h.Len(), len(ref))
		}
		for f, v := range ref {
			if got, ok := h.Get([]byte(f)); !ok || string(got) != v {
				t.Fatalf("get %s = %q %v", f, got, ok)
			}
		}
		if h.Encoding() != "hashtable" {
			t.Fatalf("encoding %s after %d fields", h.Encoding(), h.Len())
		}
		c := h.CloneObject().(*Hash)
		Apply(c, OpHSet, [][]byte{[]byte("f1"), []byte("changed")})
		if v, _ := h.Get([]byte("f1")); string(v) == "changed" {
			t.Fatal("clone shares values")
		}
		d, err := Decode(shards.KindHash, h.AppendBinary(nil))
		if err != nil {
			t.Fatal(err)
		}
		if d.Len() != h.Len() {
			t.Fatalf("decoded %d fields, want %d", d.Len(), h.Len())
		}
	}
}

func TestHashPackedKeepsInsertionOrder(t *testing.T) {
	h := NewHash()
	Apply(h, OpHSet, [][]byte{[]byte("a"), []byte("1"), []byte("b"), []byte("2"), []byte("c"), []byte("3")})
	Apply(h, OpHSet, [][]byte{[]byte("a"), []byte("longer value")})
	Apply(h, OpHDel, [][]byte{[]byte("b")})
	var got []string
	h.Each(func(f, v []byte) bool { got = append(got, string(f)+"="+string(v)); return true })
	if fmt.Sprint(got) != "[a=longer value c=3]" || h.Encoding() != "listpack" {
		t.Fatalf("got %v (%s)", got, h.Encoding())
	}
	if _, _, err := Apply(h, OpHSet, [][]byte{[]byte("odd")}); err == nil {
		t.Fatal("HSET with an odd argument count applied")
	}
	if _, _, err := Apply(h, OpSAdd, [][]byte{[]byte("m")}); err == nil {
		t.Fatal("SADD applied to a hash")
	}
}

func FuzzDecodeHash(f *testing.F) {
	h := NewHash()
	Apply(h, OpHSet, [][]byte{[]byte("a"), []byte("1")})
	f.Add(h.AppendBinary(nil))
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := decodeHash(b)
		if err != nil {
			return
		}
		if got := v.AppendBinary(nil); !bytes.Equal(got, b) {
			t.Fatalf("re-encoded %x, read %x", got, b)
		}
	})
}
