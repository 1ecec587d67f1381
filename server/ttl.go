package server

import "math"

// Expiry arithmetic shared by SET/GETEX options and the EXPIRE family.
// Redis keeps expiry in Unix milliseconds; Turnstile keeps Unix nanoseconds
// (GCRA needs them). Relative times exist only here, at the protocol edge.

// Units of expire arguments, in milliseconds.
const (
	unitSeconds = 1000
	unitMillis  = 1
)

// absExpiryMs converts an expire argument n (in unit ms each; absolute when
// abs, else relative to nowMs) to absolute Unix ms. ok is false when the
// computation overflows, which Redis reports as "invalid expire time".
func absExpiryMs(nowMs, n, unit int64, abs bool) (int64, bool) {
	if n > math.MaxInt64/unit || n < math.MinInt64/unit {
		return 0, false
	}
	ms := n * unit
	if abs {
		return ms, true
	}
	if (ms > 0 && nowMs > math.MaxInt64-ms) || (ms < 0 && nowMs < math.MinInt64-ms) {
		return 0, false
	}
	return ms + nowMs, true
}

// msToNs converts absolute Unix ms to the ns the keyspace stores. Times past
// year 2262 saturate (int64 ns cannot hold them). A result <= 0 means
// "already expired": callers must not store it, since 0 means no expiry.
func msToNs(ms int64) int64 {
	if ms > math.MaxInt64/int64(1e6) {
		return math.MaxInt64
	}
	if ms < math.MinInt64/int64(1e6) {
		return math.MinInt64
	}
	return ms * 1e6
}

// nsToMs is the inverse for replies: floor division to Unix ms.
func nsToMs(ns int64) int64 {
	ms := ns / 1e6
	if ns%1e6 < 0 {
		ms--
	}
	return ms
}

// unixSeconds is EXPIRETIME: the expiry exp (ns) as Unix seconds, rounded
// to the nearest second from its Unix ms, as Redis does.
func unixSeconds(exp int64) int64 {
	return (nsToMs(exp) + 500) / 1000
}

// remainingMs is the PTTL of a key expiring at exp (ns): rounded up, so a
// live key never reports 0 ms left.
func remainingMs(exp, now int64) int64 {
	d := exp - now
	if d <= 0 {
		return 0
	}
	return (d + 1e6 - 1) / 1e6
}

// remainingSeconds is TTL: PTTL rounded to the nearest second, as Redis does.
func remainingSeconds(exp, now int64) int64 {
	return (remainingMs(exp, now) + 500) / 1000
}

// positiveExpiryNs converts the expire argument n of SET, SETEX, PSETEX and
// GETEX (in unit ms each; absolute when abs, else relative to now) to the
// absolute Unix ns the keyspace stores. These commands accept only n > 0: ok
// is false for n <= 0 or on overflow, both "invalid expire time" in Redis.
// An absolute time may lie in the past (result <= now): the caller then
// deletes the key instead of storing it.
func positiveExpiryNs(now, n, unit int64, abs bool) (int64, bool) {
	if n <= 0 {
		return 0, false
	}
	ms, ok := absExpiryMs(nsToMs(now), n, unit, abs)
	if !ok || ms <= 0 {
		return 0, false
	}
	return msToNs(ms), true
}
