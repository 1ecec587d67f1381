package script

import (
	"math"
	"math/rand"
	"strconv"
	"testing"
)

// TestPlainNumber: the plain decimal forms are accepted with the value
// every reading gives them (tonumber, the interpreter's arithmetic
// conversion, strconv); forms those readings disagree on are refused.
func TestPlainNumber(t *testing.T) {
	for _, s := range []string{"0", "1", "-1", "+3", "10", "1.5", "-2.25", "0.5", "1e5", "1E-3", "2e+10",
		"123456789012345", "1234567890123456", "9007199254740993", "9223372036854775807", "99999999999999999999",
		"1e308", "1e-300", "1e-400", "0.0", "3.3333333333333335"} {
		f, ok := PlainNumber([]byte(s))
		if !ok {
			t.Errorf("PlainNumber(%q) refused", s)
			continue
		}
		want, _ := strconv.ParseFloat(s, 64)
		lua, _ := ParseNumber([]byte(s))
		arith, _ := ArithNumber([]byte(s))
		if f != want || lua != want || arith != want {
			t.Errorf("PlainNumber(%q) = %v; ParseFloat %v, tonumber %v, arithmetic %v", s, f, want, lua, arith)
		}
	}
	for _, s := range []string{"", "-", "+", "-0", "-0.0", "-0e5", "-1e-400", "010", "00", "0x10", " 5", "5 ", "5.",
		".5", "1e", "1e+", "inf", "nan", "1_0", "1e400", "-1e400", "abc", "1.2.3", "--1", "0b1", "0o7"} {
		if f, ok := PlainNumber([]byte(s)); ok {
			t.Errorf("PlainNumber(%q) = %v, want it refused", s, f)
		}
	}
}

// TestPlainNumberRandom compares PlainNumber with ParseFloat on random
// plain numbers, integers of every length among them.
func TestPlainNumberRandom(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	digits := func(n int) string {
		b := []byte{byte('1' + r.Intn(9))}
		for len(b) < n {
			b = append(b, byte('0'+r.Intn(10)))
		}
		return string(b)
	}
	for i := 0; i < 20000; i++ {
		s := pick3(r, "", "-", "+") + digits(1+r.Intn(22))
		if r.Intn(2) == 0 {
			s += "." + digits(1+r.Intn(20))
		}
		if r.Intn(3) == 0 {
			s += "e" + pick3(r, "", "-", "+") + strconv.Itoa(r.Intn(330))
		}
		want, err := strconv.ParseFloat(s, 64)
		f, ok := PlainNumber([]byte(s))
		negZero := want == 0 && math.Signbit(want) // refused: the interpreter reads some as +0
		if ok != (err == nil && !negZero) || (ok && f != want) {
			t.Fatalf("PlainNumber(%q) = %v, %v; ParseFloat %v, %v", s, f, ok, want, err)
		}
		if arith, _ := ArithNumber([]byte(s)); ok && arith != want {
			t.Fatalf("ArithNumber(%q) = %v, want %v", s, arith, want)
		}
	}
}

func pick3(r *rand.Rand, a, b, c string) string { return [3]string{a, b, c}[r.Intn(3)] }

// TestAppendNumberIsG14: tostring's format is C's "%.14g", which Go's 'g'
// with 14 digits matches (the same exponent rule and form).
func TestAppendNumberIsG14(t *testing.T) {
	r := rand.New(rand.NewSource(4))
	for i := 0; i < 200000; i++ {
		var f float64
		switch i % 5 {
		case 0:
			f = math.Float64frombits(r.Uint64())
		case 1:
			f = r.NormFloat64() * math.Pow(10, float64(r.Intn(40)-20))
		case 2:
			f = float64(r.Int63n(1e17)) * math.Pow(10, float64(r.Intn(8)-4))
		case 3:
			f = math.Round(r.Float64()*1e6) / 1000
		case 4: // whole numbers around AppendArg's integer form's bounds
			f = float64(r.Int63n(1<<uint(r.Intn(54))) - 1<<52)
			if r.Intn(3) == 0 {
				f = math.Copysign(0, -1) * f
			}
		}
		if math.IsNaN(f) || math.IsInf(f, 0) {
			continue
		}
		want := strconv.FormatFloat(f, 'g', 14, 64)
		if got := FormatNumber(f); got != want {
			t.Fatalf("FormatNumber(%v) = %q, want %q", f, got, want)
		}
		if got := string(AppendArg(nil, f)); got != strconv.FormatFloat(f, 'g', 17, 64) {
			t.Fatalf("AppendArg(%v) = %q", f, got)
		}
	}
}
