package policy

import (
	"fmt"
	"strconv"
	"time"

	"github.com/turnstile/turnstile/ratelimit"
)

// units are the period suffixes, longest first so that "ms" wins over "m".
var units = []struct {
	suffix string
	ns     int64
}{
	{"ms", int64(time.Millisecond)},
	{"s", int64(time.Second)},
	{"m", int64(time.Minute)},
	{"h", int64(time.Hour)},
	{"d", 24 * int64(time.Hour)},
}

// ParsePeriod reads a period: a positive integer and a unit, ms, s, m, h
// or d ("250ms", "1s", "15m", "1h", "1d"), or a bare integer of seconds
// (as CL.THROTTLE takes them). The result is in ns, within ratelimit's
// MinPeriod..MaxPeriod.
func ParsePeriod(s string) (int64, error) { return ParsePeriodBytes([]byte(s)) }

// ParsePeriodBytes is ParsePeriod for a request argument; it does not
// allocate unless the period is wrong.
func ParsePeriodBytes(b []byte) (int64, error) {
	num, unit := b, int64(time.Second)
	for _, u := range units {
		if len(b) > len(u.suffix) && string(b[len(b)-len(u.suffix):]) == u.suffix {
			num, unit = b[:len(b)-len(u.suffix)], u.ns
			break
		}
	}
	var n int64
	for _, c := range num {
		if c < '0' || c > '9' || n > ratelimit.MaxPeriod/10 { // larger is out of range anyway: no overflow
			n = -1
			break
		}
		n = n*10 + int64(c-'0')
	}
	if len(num) == 0 || n <= 0 {
		return 0, fmt.Errorf("period %q is not a positive integer with a unit (ms, s, m, h or d)", b)
	}
	if n > ratelimit.MaxPeriod/unit || n*unit < ratelimit.MinPeriod {
		return 0, fmt.Errorf("period %q is outside 1ms..100 years", b)
	}
	return n * unit, nil
}

// FormatPeriod writes a period in the largest unit that divides it.
func FormatPeriod(ns int64) string {
	for i := len(units) - 1; i >= 0; i-- {
		if u := units[i]; ns%u.ns == 0 {
			return strconv.FormatInt(ns/u.ns, 10) + u.suffix
		}
	}
	return time.Duration(ns).String()
}
