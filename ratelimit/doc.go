// Package ratelimit holds the algorithms of the RL.* commands as pure
// functions: GCRA (a token bucket in one timestamp), fixed window, sliding
// window counter, exact sliding log, and the leaky bucket as a queue. They
// follow the seed lessons' definitions, whose worked tables the tests
// reproduce. (Package gcra keeps redis-cell's own arithmetic, floats and
// all, for CL.THROTTLE's byte-compatible replies; RL.LIMIT's GCRA here is
// integer-only and takes periods in ns.)
//
// # Shape
//
// Every algorithm takes its rule (Rule), the key's stored state (decoded by
// the caller from the bytes this package encodes; absent = empty), the time
// now and a cost, and returns a Decision and the new state. The functions
// read no clock, do no I/O, take no locks and, apart from the sliding log's
// growing entry list, do not allocate: "now" is passed in by the server's
// one clock, so a decision is a deterministic function of its inputs and
// replaying the stored state reproduces it (see ARCHITECTURE: effects).
//
// A denied request changes nothing: the caller stores the new state only
// when Decision.Allowed, which makes "spend nothing on deny" and PEEK (do
// not store at all) trivial for the multi-rule check built on top.
//
// # Units and ranges
//
// Instants are int64 nanoseconds since the Unix epoch and must be >= 0;
// durations are int64 nanoseconds. NewRule bounds Limit and Period (see
// MaxLimit, MinPeriod, MaxPeriod) so that every product the algorithms form
// is computed exactly in 128 bits and every instant they return fits in an
// int64: no float, so every node of a cluster decides alike on any CPU.
//
// # Invariants (checked by the property tests)
//
//   - Allowed implies RetryAfter == -1; a denial has RetryAfter > 0, or -1
//     when the cost exceeds what the rule can ever admit;
//   - 0 <= Remaining <= Limit, ResetAfter >= 0, and ResetAfter is when the
//     state has no effect left: the key's lifetime (0: delete the key);
//   - fixed window: at most Limit admitted per aligned window, so at most
//     2*Limit in any interval of length Period;
//   - sliding log: at most Limit admitted in any interval of length Period,
//     exactly (a request is admitted whenever that bound allows it);
//   - sliding window counter: the seed's estimate prev*(1-f) + cur, with
//     the same comparison as the seed; exact within one window, and at most
//     2*Limit in any interval of length Period (previous window's
//     requests are assumed evenly spread);
//   - queue: at most Burst requests wait at any time, and they leave one
//     every Period/Limit (the emission interval), never earlier;
//   - GCRA: exactly a token bucket of Capacity tokens refilled one per
//     Interval (checked against rational-arithmetic token counting), so at
//     most Capacity + D/Interval admitted in any interval of length D.
package ratelimit
