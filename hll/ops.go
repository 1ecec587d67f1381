package hll

import (
	"encoding/binary"
	"math"
)

// Add adds elems to v (nil: a new, empty value) as PFADD does and returns
// the value and whether it changed (a register rose, or v was nil); a
// change invalidates the cached cardinality. v itself is not modified.
// sparseMax is hll-sparse-max-bytes.
//
// On ErrCorrupt (registers that do not add up, found when a sparse value
// must turn dense) it also returns the value as the elements before the
// failing one left it, and whether they changed it: Redis changes its
// value in place and keeps those changes when PFADD then fails.
func Add(v []byte, elems [][]byte, sparseMax int) ([]byte, bool, error) {
	changed := v == nil // a new value counts as a change
	if v == nil {
		v = New()
	} else {
		if err := Check(v); err != nil {
			return nil, false, err
		}
		v = append([]byte(nil), v...)
	}
	for _, e := range elems {
		i, count := patLen(e)
		out, up, err := set(v, i, count, sparseMax)
		if err != nil {
			return v, changed, err // set left v as it was
		}
		v = out
		changed = changed || up
	}
	if changed {
		invalidate(v)
	}
	return v, changed, nil
}

// Cached returns the cardinality v's header caches, if it is valid.
func Cached(v []byte) (uint64, bool) {
	if v[15]&0x80 != 0 {
		return 0, false
	}
	return binary.LittleEndian.Uint64(v[8:16]), true
}

// WithCache returns a copy of v caching card (what PFCOUNT stores).
func WithCache(v []byte, card uint64) []byte {
	out := append([]byte(nil), v...)
	binary.LittleEndian.PutUint64(out[8:16], card)
	return out
}

// Count estimates the cardinality of v's registers (not its cache).
func Count(v []byte) (uint64, error) {
	var histo [64]int
	if v[4] == encDense {
		regs := v[headerSize:]
		for i := range registers {
			histo[denseGet(regs, i)]++
		}
	} else {
		set := 0
		err := sparseRegisters(v[headerSize:], func(_, n int, val uint8) {
			histo[val] += n
			set += n
		})
		if err != nil {
			return 0, err
		}
		histo[0] = registers - set
	}
	return estimate(&histo), nil
}

// Registers is a full set of register values, for PFCOUNT of several keys
// and PFMERGE.
type Registers [registers]uint8

// Merge raises r's registers to v's where v's are higher.
func (r *Registers) Merge(v []byte) error {
	if err := Check(v); err != nil {
		return err
	}
	if v[4] == encDense {
		regs := v[headerSize:]
		for i := range r {
			r[i] = max(r[i], denseGet(regs, i))
		}
		return nil
	}
	return sparseRegisters(v[headerSize:], func(first, n int, val uint8) {
		for i := first; i < first+n; i++ {
			r[i] = max(r[i], val)
		}
	})
}

// Count estimates the cardinality of r.
func (r *Registers) Count() uint64 {
	var histo [64]int
	for _, val := range r {
		histo[val]++
	}
	return estimate(&histo)
}

// Store raises the registers of v (nil: a new value) to r's, as PFMERGE
// does: dense first when dense is set (a source was dense), then each
// register that is not zero in order, sparse values turning dense as they
// must; the cache is invalidated. v is not modified.
func (r *Registers) Store(v []byte, dense bool, sparseMax int) ([]byte, error) {
	if v == nil {
		v = New()
	} else {
		if err := Check(v); err != nil {
			return nil, err
		}
		v = append([]byte(nil), v...)
	}
	if dense && v[4] == encSparse {
		d, err := toDense(v)
		if err != nil {
			return nil, err
		}
		v = d
	}
	for i, val := range r {
		if val == 0 {
			continue
		}
		var err error
		if v, _, err = set(v, i, val, sparseMax); err != nil {
			return nil, err
		}
	}
	invalidate(v)
	return v, nil
}

// IsDense reports whether v uses the dense encoding.
func IsDense(v []byte) bool { return v[4] == encDense }

// estimate is Redis's hllCount over a histogram of register values
// (Ertl's estimator).
func estimate(histo *[64]int) uint64 {
	m := float64(registers)
	z := m * tau((m-float64(histo[q+1]))/m)
	for j := q; j >= 1; j-- {
		z += float64(histo[j])
		z *= 0.5
	}
	z += m * sigma(float64(histo[0])/m)
	return uint64(math.Round(alphaInf * m * m / z))
}

func sigma(x float64) float64 {
	if x == 1 {
		return math.Inf(1)
	}
	y, z := 1.0, x
	for {
		x *= x
		zPrime := z
		z += float64(x * y) // rounded: no fused multiply-add (C rounds each step)
		y += y
		if zPrime == z {
			return z
		}
	}
}

func tau(x float64) float64 {
	if x == 0 || x == 1 {
		return 0
	}
	y, z := 1.0, 1-x
	for {
		x = math.Sqrt(x)
		zPrime := z
		y *= 0.5
		d := 1 - x
		z -= float64(float64(d*d) * y)
		if zPrime == z {
			return z / 3
		}
	}
}
