package hll

import (
	"bytes"
	"testing"
)

// FuzzValue feeds arbitrary bytes, as a stored value, and an element to
// every operation: none may panic; what Add and Store return is a valid
// value whose registers count (a failed Add's partial value is valid
// too), and the input is never modified.
func FuzzValue(f *testing.F) {
	f.Add(New(), []byte("a"))
	f.Add([]byte("HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80\x7f\xff\x7f\xff\x80"), []byte("x"))
	f.Add([]byte("HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80\x80\x7f"), []byte(""))
	f.Add([]byte("HYLL\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80"), []byte("y"))
	f.Fuzz(func(t *testing.T, v, elem []byte) {
		orig := bytes.Clone(v)
		if Check(v) != nil {
			return
		}
		_, _ = Count(v)
		_, _ = Cached(v)
		var regs Registers
		mergeErr := regs.Merge(v)
		if out, _, err := Add(v, [][]byte{elem, elem, []byte("z")}, DefaultSparseMaxBytes); err != nil {
			if Check(out) != nil {
				t.Fatalf("a failed Add left an invalid value %x", out)
			}
		} else {
			if Check(out) != nil {
				t.Fatalf("Add made an invalid value %x", out)
			}
			if _, err := Count(out); err != nil && mergeErr == nil {
				t.Fatalf("Add of %x made %x, which does not count: %v", v, out, err)
			}
		}
		if out, err := regs.Store(v, false, DefaultSparseMaxBytes); err == nil && mergeErr == nil {
			if _, err := Count(out); err != nil {
				t.Fatalf("Store on %x made %x, which does not count: %v", v, out, err)
			}
		}
		if !bytes.Equal(v, orig) {
			t.Fatal("an operation modified its input")
		}
	})
}
