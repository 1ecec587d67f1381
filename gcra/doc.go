// Package gcra implements the Generic Cell Rate Algorithm exactly the way
// redis-cell 0.5.0 computes its CL.THROTTLE reply, as a pure function.
//
// # The algorithm in plain words
//
// A quota "max_burst, count per period" is turned into three numbers, all in
// nanoseconds:
//
//   - the emission interval E = period / count: how much time one token is
//     "worth". One token becomes available again every E;
//   - the limit = max_burst + 1: how many tokens a full bucket holds;
//   - the delay variation tolerance tau = E * limit: how far ahead of the
//     clock the bucket may be booked.
//
// The only state per key is the theoretical arrival time (TAT): the instant
// at which the bucket will be completely full again, if nothing else
// happens. A key that does not exist is a full bucket (TAT = now).
//
// A request for n tokens costs inc = E*n. It would move the TAT to
// newTAT = max(TAT, now) + inc. It is allowed when that new booking is at
// most tau ahead of the clock (newTAT - now <= tau), and then the caller
// stores newTAT and lets the key expire at newTAT (the bucket is full then,
// which is the same as having no key). Otherwise it is limited, nothing is
// stored, and it may be retried after newTAT - now - tau.
//
// The reply fields follow: reset_after is the time until the bucket is full
// (TAT - now after the call), and remaining is (tau - reset_after) / E,
// computed at microsecond precision exactly as redis-cell does.
//
// A quantity of 0 is a "peek" (it changes nothing), a negative quantity is a
// refund (it moves the TAT back), and a quantity above the limit can never
// succeed.
//
// # Purity
//
// Decide reads no clock, does no I/O, takes no locks and does not allocate.
// All instants are int64 nanoseconds since the Unix epoch, passed in by the
// caller; all durations are int64 nanoseconds.
//
// # Invariants
//
// For every input (checked by FuzzDecide):
//
//   - Remaining is within [0, Limit] and ResetAfter is >= 0;
//   - an allowed result has RetryAfter == -1; a limited one has RetryAfter
//     == -1 (can never succeed) or > 0;
//   - a limited result always has Action Keep: limited calls change nothing;
//   - n > Limit is always limited with RetryAfter == -1;
//   - Action Store implies NewTAT > now, so the key has a positive lifetime;
//   - no arithmetic wraps around: every product and sum is overflow-checked
//     and saturates, so a huge quantity can never turn into a small or
//     negative cost.
//
// For non-negative now and tat (any real clock), a tau that fits in int64
// and a new TAT that fits in int64 (before the year 2262), the decision,
// RetryAfter, ResetAfter and NewTAT are exact; FuzzDecide checks this
// against a math/big model.
//
// # Deviations from redis-cell
//
// For all ordinary inputs the 5-integer reply (Result.Reply) is identical to
// redis-cell's. Where redis-cell misbehaves this package deliberately does
// something sane instead:
//
//   - Negative max_burst, count or period are rejected with ErrNegative
//     (redis-cell feeds them into the arithmetic). max_burst = MaxInt64 is
//     rejected with ErrBurstTooLarge (redis-cell wraps the limit to
//     MinInt64 and then limits everything).
//   - No wrap-around: redis-cell computes E*limit and E*n with two's
//     complement wrapping, so a quantity of MaxInt64 can become a refund and
//     MinInt64 a peek. Here tau saturates at MaxInt64 (durations beyond
//     about 292 years are treated as infinite), a cost larger than tau can
//     never succeed, and a refund larger than the backlog empties the bucket.
//   - remaining is clamped to [0, limit]. redis-cell can report more than
//     limit because of its microsecond truncation (issue #50: "6000 6000 1"
//     replies 6024 where this package replies 6001; with E < 1 µs it replies
//     MaxInt64), and it can report -1 in rare sub-microsecond cases.
//   - reset_after is never negative. redis-cell reports tat - now for a
//     limited request even when the stored TAT is already in the past.
//   - A refund that brings the TAT to or before now returns Action Delete:
//     the bucket is completely full, so no key is kept. redis-cell writes a
//     key without any TTL and, for -2 ms or less, replies "Error while
//     setting key expire" after the write.
//   - A peek (n == 0) returns Action Keep. redis-cell rewrites the same TAT
//     with the same expiry (or creates a key with TTL 0 that vanishes at
//     once), which is observably the same.
//   - The TAT cannot be stored beyond MaxInt64 ns (year 2262). An allowed
//     request whose new TAT would lie beyond stores MaxInt64 instead, while
//     the limiting decision itself is made with the exact, unsaturated
//     backlog. If now itself is MaxInt64 nothing more can be booked and
//     consuming requests are limited with RetryAfter == -1.
package gcra
