package gcra

import (
	"errors"
	"math"
	"testing"
)

func TestNewQuota(t *testing.T) {
	const max = math.MaxInt64
	tests := []struct {
		name                    string
		burst, count, period    int64
		wantErr                 error
		wantE, wantLim, wantTau int64
	}{
		{"15 30 60", 15, 30, 60, nil, 2e9, 16, 32e9},
		{"1000 1000 60", 1000, 1000, 60, nil, 60e6, 1001, 60_060_000_000},
		{"7 per 10 s", 0, 7, 10, nil, 1428571428, 1, 1428571428},
		{"6000 per 1 s", 6000, 6000, 1, nil, 166666, 6001, 166666 * 6001},
		{"1e9 per s", 0, 2000, 1, nil, 500000, 1, 500000},
		{"exactly 1 ns", 1e9, 1e9, 1, nil, 1, 1e9 + 1, 1e9 + 1},
		{"count 0", 15, 0, 60, ErrZeroRate, 0, 0, 0},
		{"period 0", 15, 30, 0, ErrZeroRate, 0, 0, 0},
		{"both 0", 0, 0, 0, ErrZeroRate, 0, 0, 0},
		{"count 0 beats negative", -1, 0, -5, ErrZeroRate, 0, 0, 0},
		{"period 0 beats burst too large", max, 30, 0, ErrZeroRate, 0, 0, 0},
		{"2e9 per s is zero rate", 5, 2_000_000_000, 1, ErrZeroRate, 0, 0, 0},
		{"MaxInt64 per s is zero rate", 5, max, 1, ErrZeroRate, 0, 0, 0},
		{"negative burst", -1, 30, 60, ErrNegative, 0, 0, 0},
		{"negative count", 15, -30, 60, ErrNegative, 0, 0, 0},
		{"negative period", 15, 30, -60, ErrNegative, 0, 0, 0},
		{"MinInt64 count", 15, math.MinInt64, 60, ErrNegative, 0, 0, 0},
		{"burst MaxInt64", max, 30, 60, ErrBurstTooLarge, 0, 0, 0},
		{"zero rate beats burst too large", max, max, 1, ErrZeroRate, 0, 0, 0},
		{"burst MaxInt64-1 saturates tau", max - 1, 30, 60, nil, 2e9, max, max},
		{"tau saturates", 1 << 40, 1, 1 << 30, nil, 1 << 30 * 1e9, 1<<40 + 1, max},
		// period*1e9 overflows int64: exact product, one rounding.
		{"huge period saturates E", 0, 1, max, nil, max, 1, max},
		{"period 1e10 / 3", 0, 3, 10_000_000_000, nil, 3333333333333333504, 1, 3333333333333333504},
		{"period just past int64 ns / 2", 0, 2, 9223372037, nil, 4611686018499999744, 1, 4611686018499999744},
		{"period 9223372037 saturates E", 0, 1, 9223372037, nil, max, 1, max},
		// float64(period)*1e9 would round twice and give ...992.
		{"period 2^53+1 single rounding", 0, 1e9, 1<<53 + 1, nil, 9007199254740994, 1, 9007199254740994},
		{"huge period huge count", 3, max, max, nil, 1e9, 4, 4e9},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q, err := NewQuota(tc.burst, tc.count, tc.period)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if err != nil {
				if q != (Quota{}) {
					t.Errorf("quota = %+v on error, want zero", q)
				}
				return
			}
			if q.EmissionInterval() != tc.wantE || q.Limit() != tc.wantLim || q.Tolerance() != tc.wantTau {
				t.Errorf("E, limit, tau = %d, %d, %d; want %d, %d, %d",
					q.EmissionInterval(), q.Limit(), q.Tolerance(), tc.wantE, tc.wantLim, tc.wantTau)
			}
		})
	}
}

func TestErrorTexts(t *testing.T) {
	for err, want := range map[error]string{
		ErrZeroRate:      "Zero rates are not supported",
		ErrNegative:      "Negative values are not supported",
		ErrBurstTooLarge: "max_burst is too large",
	} {
		if err.Error() != want {
			t.Errorf("error text %q, want %q", err.Error(), want)
		}
	}
}
