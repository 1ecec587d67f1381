package gcra

// Reply returns redis-cell's 5-integer reply:
// [limited, limit, remaining, retry_after s, reset_after s].
// retry_after stays -1 when RetryAfter is -1 (allowed, or can never
// succeed); the other durations are rounded by Seconds.
func (r Result) Reply() [5]int64 {
	var limited, retry int64 = 0, -1
	if r.Limited {
		limited = 1
	}
	if r.RetryAfter != -1 {
		retry = Seconds(r.RetryAfter)
	}
	return [5]int64{limited, r.Limit, r.Remaining, retry, Seconds(r.ResetAfter)}
}

// Seconds rounds a ns duration to whole seconds exactly as redis-cell does:
// keep whole seconds (truncate toward zero), add 1 if the fractional part is
// >= 1 ms and d > 0.
//
// The whole seconds are taken from the float64 sum sec + nsec/1e9, as
// redis-cell (and Go's Duration.Seconds) computes it, not from integer
// division: from 2^24 s (about 194 days) on, that sum can round up to the
// next second when nsec is close to 1e9, and redis-cell then replies one
// more. Integers alone would differ there.
func Seconds(d int64) int64 {
	sec := d / nsPerSecond
	nsec := d % nsPerSecond // same sign as d
	s := int64(float64(sec) + float64(nsec)/1e9)
	if nsec >= 1_000_000 {
		s++
	}
	return s
}
