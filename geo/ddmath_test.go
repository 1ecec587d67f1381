package geo

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

// glibcValues are sin, cos and asin as the C library of Debian 12 (glibc
// 2.36, which redis-server uses) returns them, for random arguments in the
// ranges geo meets.
var glibcValues = []struct {
	fn     string
	x, got float64
}{
	{"sin", -0x1.3815da07957c0p-2, -0x1.3346c18dd1a78p-2},
	{"sin", 0x1.87b96c578acb0p-2, 0x1.7e3d6772a5e08p-2},
	{"sin", 0x1.5b83684fff29ap+1, 0x1.a7c01decc4f30p-2},
	{"sin", -0x1.c23b3d1bb7cb0p-3, -0x1.be9d13d02fbb5p-3},
	{"sin", 0x1.9b1bc916d3b80p-5, 0x1.9aef9daada7c6p-5},
	{"sin", 0x1.1e57b51a95788p-1, 0x1.0fa5c3500626ap-1},
	{"sin", -0x1.025384e0e16fap+1, -0x1.cd9c82f7336d1p-1},
	{"sin", 0x1.382d8616fb200p-4, 0x1.37e02d0350c5cp-4},
	{"sin", 0x1.a99985c8470c8p-1, 0x1.7a4095a546355p-1},
	{"sin", 0x1.e003682620dccp+0, 0x1.e87be3f657989p-1},
	{"sin", -0x1.4c7e7b0578075p+1, -0x1.08fc0bf93767fp-1},
	{"sin", -0x1.421b7cafc2a6dp+0, -0x1.e73151841ce38p-1},
	{"cos", -0x1.4f529c2f3cdf8p+0, 0x1.082ebf00c37d0p-2},
	{"cos", 0x1.fb5254b65994cp-1, 0x1.188f5650e193cp-1},
	{"cos", 0x1.3cedfae855ff8p-1, 0x1.a1008ac39a4cfp-1},
	{"cos", -0x1.774aa8296d63cp+0, 0x1.ac87b253d0602p-4},
	{"cos", 0x1.8b034a2891188p+0, 0x1.c70bcb913760bp-6},
	{"cos", 0x1.7cbac56196304p+0, 0x1.55e905f7099d2p-4},
	{"cos", 0x1.f85f9461dc250p-2, 0x1.c32353b71da63p-1},
	{"cos", 0x1.7aad05d711ae8p-2, 0x1.dd6374b70714dp-1},
	{"cos", -0x1.1894b1c0310fdp+0, 0x1.d41ca41e4d97ep-2},
	{"cos", -0x1.8d4fb7aad570fp+0, 0x1.33fac18456ad0p-6},
	{"cos", 0x1.73ffba0116e30p-4, 0x1.fde3cfe31a430p-1},
	{"cos", -0x1.68d0d3fc59625p+0, 0x1.49086669d8e13p-3},
	{"asin", 0x1.858be8e12b2b8p-3, 0x1.87ef3cc281e7cp-3},
	{"asin", 0x1.ef7fd19980920p-3, 0x1.f47722f3dd575p-3},
	{"asin", 0x1.ecdf863990e60p-6, 0x1.ecf29010593e9p-6},
	{"asin", 0x1.db11a2a9c3fb0p-2, 0x1.ee02803839b1cp-2},
	{"asin", 0x1.c31a96cba48f0p-2, 0x1.d32386655b381p-2},
	{"asin", 0x1.af529bcc80253p-1, 0x1.007422c5a4d34p+0},
	{"asin", 0x1.09caa2cef40cdp-1, 0x1.17767c24615b6p-1},
	{"asin", 0x1.47d45092d3611p-1, 0x1.63c70b89bbb85p-1},
	{"asin", 0x1.ffc4888096874p-2, 0x1.0bf2cee28ff15p-1},
	{"asin", 0x1.532c95c57074bp-1, 0x1.72bb23049d890p-1},
	{"asin", 0x1.d44e48d3d08a4p-2, 0x1.e663e00403025p-2},
	{"asin", 0x1.1cd6bc3411534p-2, 0x1.20a56966015c8p-2},
}

func TestMatchesGlibc(t *testing.T) {
	fns := map[string]func(float64) float64{"sin": Sin, "cos": Cos, "asin": Asin}
	for _, v := range glibcValues {
		if got := fns[v.fn](v.x); got != v.got {
			t.Errorf("%s(%x) = %x, glibc %x", v.fn, v.x, got, v.got)
		}
	}
}

const refPrec = 240

// bigSinCos is sin and cos of x by their series in refPrec bits (|x| a
// few units at most).
func bigSinCos(x float64) (sin, cos *big.Float) {
	return bigSinCosOf(new(big.Float).SetPrec(refPrec).SetFloat64(x))
}

func bigSinCosOf(bx *big.Float) (sin, cos *big.Float) {
	x2 := new(big.Float).SetPrec(refPrec).Mul(bx, bx)
	sin = new(big.Float).SetPrec(refPrec).Set(bx)
	cos = new(big.Float).SetPrec(refPrec).SetFloat64(1)
	st := new(big.Float).SetPrec(refPrec).Set(bx)
	ct := new(big.Float).SetPrec(refPrec).SetFloat64(1)
	for k := 1; k < 80; k++ {
		st.Mul(st, x2).Quo(st, big.NewFloat(float64((2*k)*(2*k+1)))).Neg(st)
		ct.Mul(ct, x2).Quo(ct, big.NewFloat(float64((2*k-1)*(2*k)))).Neg(ct)
		sin.Add(sin, st)
		cos.Add(cos, ct)
	}
	return sin, cos
}

// TestCorrectlyRounded: on random arguments, Sin and Cos are the float64
// nearest the exact value, and Asin's result brackets the exact asin
// within half a unit in the last place.
func TestCorrectlyRounded(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	nearest := func(name string, x float64, got float64, exact *big.Float) {
		t.Helper()
		want, _ := exact.Float64() // rounds to nearest even
		if got != want {
			t.Fatalf("%s(%v) = %v, correctly rounded %v", name, x, got, want)
		}
	}
	for range 2000 {
		x := (r.Float64()*2 - 1) * 3.2
		s, c := bigSinCos(x)
		nearest("Sin", x, Sin(x), s)
		nearest("Cos", x, Cos(x), c)
	}
	for range 1000 {
		y := r.Float64()
		a := Asin(y)
		half := func(toward float64) *big.Float { // the midpoint between a and its neighbour
			m := new(big.Float).SetPrec(refPrec).SetFloat64(a)
			m.Add(m, new(big.Float).SetPrec(refPrec).SetFloat64(math.Nextafter(a, toward)))
			return m.Quo(m, big.NewFloat(2))
		}
		lo, _ := bigSinCosOf(half(0))
		hi, _ := bigSinCosOf(half(2))
		by := new(big.Float).SetPrec(refPrec).SetFloat64(y)
		if lo.Cmp(by) > 0 || hi.Cmp(by) < 0 {
			t.Fatalf("Asin(%v) = %v does not bracket asin(y)", y, a)
		}
	}
}
