package gcra

import "errors"

// Errors returned by NewQuota. The server prefixes their text with
// "Cell error: Store error: ", as redis-cell does.
var (
	// ErrZeroRate: count or period is 0, or the rate is more than one token
	// per nanosecond (the emission interval truncates to 0 ns). The text is
	// redis-cell's, byte for byte.
	ErrZeroRate = errors.New("Zero rates are not supported")

	// ErrNegative: max_burst, count or period is negative. redis-cell accepts
	// negative values and produces nonsense; this package rejects them.
	ErrNegative = errors.New("Negative values are not supported")

	// ErrBurstTooLarge: max_burst is MaxInt64, so limit = max_burst+1 would
	// overflow (redis-cell wraps it to a negative limit).
	ErrBurstTooLarge = errors.New("max_burst is too large")
)
