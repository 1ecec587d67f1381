package geo

import "math"

// Sin, Cos and Asin rounded correctly (to the float64 nearest the exact
// value), as the C library Redis runs on computes them in all but
// vanishingly rare cases; Go's math package may be a unit in the last
// place off, which shows in a stored distance (GEORADIUS STOREDIST keeps
// all 17 digits). They evaluate in double-double arithmetic (a pair of
// float64s, about 106 bits), then round once.

// dd is hi + lo with |lo| <= ulp(hi)/2.
type dd struct{ hi, lo float64 }

func twoSum(a, b float64) dd {
	s := a + b
	bb := s - a
	return dd{s, (a - (s - bb)) + (b - bb)}
}

func quickTwoSum(a, b float64) dd {
	s := a + b
	return dd{s, b - (s - a)}
}

func twoProd(a, b float64) dd {
	p := a * b
	return dd{p, math.FMA(a, b, -p)}
}

func (a dd) add(b dd) dd {
	s := twoSum(a.hi, b.hi)
	t := twoSum(a.lo, b.lo)
	s = quickTwoSum(s.hi, s.lo+t.hi)
	return quickTwoSum(s.hi, s.lo+t.lo)
}

func (a dd) neg() dd { return dd{-a.hi, -a.lo} }

func (a dd) mul(b dd) dd {
	p := twoProd(a.hi, b.hi)
	p.lo += a.hi*b.lo + a.lo*b.hi
	return quickTwoSum(p.hi, p.lo)
}

// divF divides by a float64.
func (a dd) divF(b float64) dd {
	q1 := a.hi / b
	p := twoProd(q1, b)
	r := a.add(p.neg())
	q2 := r.hi / b
	return quickTwoSum(q1, q2)
}

func (a dd) div(b dd) dd {
	q1 := a.hi / b.hi
	r := a.add(b.mul(dd{q1, 0}).neg())
	q2 := r.hi / b.hi
	r = r.add(b.mul(dd{q2, 0}).neg())
	q3 := r.hi / b.hi
	return quickTwoSum(q1, q2).add(dd{q3, 0})
}

// float64 rounds to the nearest float64 (hi, once normalised, is hi+lo
// rounded: but a sum whose lo sits exactly on a tie is re-rounded).
func (a dd) float64() float64 { return a.hi + a.lo }

// pi/2 as a double-double (the digits of π/2 split in two float64s).
var halfPi = dd{1.5707963267948966, 6.123233995736766e-17}

// taylorSinCos returns sin and cos of r (|r| <= about π/4) by their
// series, to double-double precision.
func taylorSinCos(r dd) (sin, cos dd) {
	r2 := r.mul(r)
	sin, cos = r, dd{1, 0}
	term := r         // r^(2k+1)/(2k+1)!
	cterm := dd{1, 0} // r^(2k)/(2k)!
	for k := 1; k < 30; k++ {
		term = term.mul(r2).divF(float64((2 * k) * (2*k + 1))).neg()
		cterm = cterm.mul(r2).divF(float64((2*k - 1) * (2 * k))).neg()
		sin = sin.add(term)
		cos = cos.add(cterm)
		if math.Abs(term.hi) < 1e-40 && math.Abs(cterm.hi) < 1e-40 {
			break
		}
	}
	return sin, cos
}

// sinCosDD is sin and cos of x in double-double, after reducing x by
// multiples of π/2 (exact enough for the arguments geo meets, far from
// huge ones: beyond 1e6 radians it uses Go's math package).
func sinCosDD(x dd) (sin, cos dd, ok bool) {
	if math.IsNaN(x.hi) || math.Abs(x.hi) > 1e6 {
		return dd{}, dd{}, false
	}
	k := math.Round(x.hi / halfPi.hi)
	r := x.add(halfPi.mul(dd{k, 0}).neg())
	s, c := taylorSinCos(r)
	switch q := int64(k) & 3; q {
	case 0:
		return s, c, true
	case 1:
		return c, s.neg(), true
	case 2:
		return s.neg(), c.neg(), true
	default:
		return c.neg(), s, true
	}
}

// Sin is sin(x) rounded correctly.
func Sin(x float64) float64 {
	if x == 0 {
		return x // keeps -0
	}
	s, _, ok := sinCosDD(dd{x, 0})
	if !ok {
		return math.Sin(x)
	}
	return s.float64()
}

// Cos is cos(x) rounded correctly.
func Cos(x float64) float64 {
	_, c, ok := sinCosDD(dd{x, 0})
	if !ok {
		return math.Cos(x)
	}
	return c.float64()
}

// Asin is asin(y) rounded correctly: Go's asin refined by one Newton step
// on sin(t) = y in double-double.
func Asin(y float64) float64 {
	t0 := math.Asin(y)
	if math.IsNaN(t0) || y == 0 || math.Abs(y) == 1 {
		return t0
	}
	t := dd{t0, 0}
	for range 2 {
		s, c, ok := sinCosDD(t)
		if !ok || c.hi == 0 {
			return t0
		}
		t = t.add(s.add(dd{-y, 0}).div(c).neg())
	}
	return t.float64()
}
