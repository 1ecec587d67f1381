package gcra

import (
	"math"
	"math/big"
	"testing"
)

func FuzzDecide(f *testing.F) {
	max, min := int64(math.MaxInt64), int64(math.MinInt64)
	f.Add(int64(15), int64(30), int64(60), int64(0), false, now0, int64(1))
	f.Add(int64(15), int64(30), int64(60), now0+60*sec, true, now0, int64(1))
	f.Add(int64(15), int64(30), int64(60), now0+10*sec, true, now0, int64(-3))
	f.Add(int64(15), int64(30), int64(60), now0+10*sec, true, now0, int64(-5))
	f.Add(int64(15), int64(30), int64(60), now0+10*sec, true, now0, min)
	f.Add(int64(15), int64(30), int64(60), now0, true, now0, max)
	f.Add(int64(1e9), int64(1e9), int64(1), int64(0), false, now0, int64(1))
	f.Add(max-1, int64(1e6), int64(1), max, true, now0, int64(8e15))
	f.Add(int64(0), int64(1), max, int64(0), false, now0, int64(1))
	f.Add(int64(3), int64(1), int64(1), max, true, min, int64(0))
	f.Add(int64(3), int64(1), int64(1), min, true, max, int64(1))
	f.Fuzz(func(t *testing.T, burst, count, period, tat int64, exists bool, now, n int64) {
		q, err := NewQuota(burst, count, period)
		if err != nil {
			q = Quota{} // the zero Quota must be safe too
		}
		r := Decide(tat, exists, now, q, n)
		_ = r.Reply()
		checkInvariants(t, tat, exists, now, q, n, r)
		if err == nil {
			checkExact(t, tat, exists, now, q, n, r)
		}
	})
}

func checkInvariants(t *testing.T, tat int64, exists bool, now int64, q Quota, n int64, r Result) {
	t.Helper()
	fail := func(what string) {
		t.Fatalf("%s: Decide(%d, %v, %d, %+v, %d) = %+v", what, tat, exists, now, q, n, r)
	}
	if r.Limit != q.Limit() {
		fail("Limit differs from the quota")
	}
	if r.Remaining < 0 || r.Remaining > r.Limit {
		fail("Remaining outside [0, Limit]")
	}
	if r.ResetAfter < 0 {
		fail("negative ResetAfter")
	}
	if !r.Limited && r.RetryAfter != -1 {
		fail("allowed with RetryAfter != -1")
	}
	if r.Limited && r.RetryAfter != -1 && r.RetryAfter <= 0 {
		fail("limited with RetryAfter <= 0")
	}
	if r.Limited && r.Action != Keep {
		fail("limited but Action != Keep")
	}
	if n > r.Limit && (!r.Limited || r.RetryAfter != -1) {
		fail("n > Limit not limited forever")
	}
	if r.Action == Store && (r.NewTAT <= now || r.NewTAT-now != r.ResetAfter) {
		fail("Store with NewTAT <= now or NewTAT-now != ResetAfter")
	}
	if n == 0 && r.Action != Keep {
		fail("peek changes state")
	}
	if n > 0 && !r.Limited && r.Action != Store {
		fail("allowed consumption not stored")
	}
	if n < 0 && r.Action == Store && exists && r.NewTAT >= tat {
		fail("refund did not move the TAT back")
	}
}

// checkExact compares with a math/big model of the GCRA decision wherever
// no saturation is involved: tau fits, the new TAT fits, now >= 0.
func checkExact(t *testing.T, tat int64, exists bool, now int64, q Quota, n int64, r Result) {
	t.Helper()
	if now < 0 || n > q.Limit() || q.Tolerance() == math.MaxInt64 {
		return
	}
	if !exists || tat < now {
		tat = now
	}
	bigT := new(big.Int).Mul(big.NewInt(q.EmissionInterval()), big.NewInt(n))
	bigT.Add(bigT, big.NewInt(tat-now)) // newTAT - now, exact
	newTAT := new(big.Int).Add(bigT, big.NewInt(now))
	if !newTAT.IsInt64() {
		return
	}
	tau := big.NewInt(q.Tolerance())
	wantLimited := bigT.Cmp(tau) > 0
	fail := func(what string) {
		t.Fatalf("%s: Decide(%d, %v, %d, %+v, %d) = %+v; newTAT-now %v", what, tat, exists, now, q, n, r, bigT)
	}
	switch {
	case r.Limited != wantLimited:
		fail("limited decision differs from the exact model")
	case wantLimited && r.RetryAfter != new(big.Int).Sub(bigT, tau).Int64():
		fail("RetryAfter differs from the exact model")
	case wantLimited && r.ResetAfter != tat-now:
		fail("limited ResetAfter differs from tat-now")
	case !wantLimited && bigT.Sign() > 0 && r.ResetAfter != bigT.Int64():
		fail("ResetAfter differs from the exact model")
	case !wantLimited && n != 0 && bigT.Sign() <= 0 && r.Action != Delete:
		fail("refund to or before now not deleted")
	case !wantLimited && n != 0 && bigT.Sign() > 0 && (r.Action != Store || r.NewTAT != newTAT.Int64()):
		fail("NewTAT differs from the exact model")
	}
}

func FuzzNewQuota(f *testing.F) {
	max := int64(math.MaxInt64)
	f.Add(int64(15), int64(30), int64(60))
	f.Add(int64(0), int64(1), max)
	f.Add(max, int64(1), int64(1))
	f.Add(int64(-1), int64(1), int64(1))
	f.Add(int64(0), int64(2_000_000_000), int64(1))
	f.Add(int64(0), int64(1e9), int64(1)<<53+1)
	f.Fuzz(func(t *testing.T, burst, count, period int64) {
		q, err := NewQuota(burst, count, period)
		fail := func(want string) {
			t.Fatalf("NewQuota(%d, %d, %d) error %v, want %s", burst, count, period, err, want)
		}
		switch {
		case count == 0 || period == 0:
			if err != ErrZeroRate {
				fail("ErrZeroRate")
			}
		case burst < 0 || count < 0 || period < 0:
			if err != ErrNegative {
				fail("ErrNegative")
			}
		case err == ErrZeroRate:
			// Under 1 ns per token, up to the float64 rounding of the rate.
			if rate(count, period) >= 1+0x1p-50 {
				fail("no error")
			}
		case rate(count, period) < 1-0x1p-50:
			fail("ErrZeroRate")
		case burst == math.MaxInt64:
			if err != ErrBurstTooLarge {
				fail("ErrBurstTooLarge")
			}
		case err != nil:
			fail("no error")
		default:
			checkQuota(t, q, burst, count, period)
		}
	})
}

// rate returns period*1e9/count (ns per token), computed exactly and then
// rounded to float64.
func rate(count, period int64) float64 {
	r := new(big.Rat).SetFrac(new(big.Int).Mul(big.NewInt(period), big.NewInt(1e9)), big.NewInt(count))
	f, _ := r.Float64()
	return f
}

// checkQuota checks E against the exact rational period*1e9/count (one
// float64 rounding of the product, one of the quotient) and tau = sat(E*limit).
func checkQuota(t *testing.T, q Quota, burst, count, period int64) {
	t.Helper()
	e, lim, tau := q.EmissionInterval(), q.Limit(), q.Tolerance()
	if e < 1 || lim != burst+1 || tau < e {
		t.Fatalf("NewQuota(%d, %d, %d) = E %d limit %d tau %d", burst, count, period, e, lim, tau)
	}
	ef := rate(count, period)
	if e != math.MaxInt64 && math.Abs(float64(e)-ef) > ef*0x1p-50+1 {
		t.Fatalf("NewQuota(%d, %d, %d): E %d, exact %v", burst, count, period, e, ef)
	}
	if e == math.MaxInt64 && ef < 0x1p63*(1-0x1p-50) {
		t.Fatalf("NewQuota(%d, %d, %d): E saturated, exact %v", burst, count, period, ef)
	}
	wantTau := new(big.Int).Mul(big.NewInt(e), big.NewInt(lim))
	if !wantTau.IsInt64() {
		wantTau.SetInt64(math.MaxInt64)
	}
	if tau != wantTau.Int64() {
		t.Fatalf("NewQuota(%d, %d, %d): tau %d, want %v", burst, count, period, tau, wantTau)
	}
}
