// Package libtest runs real rate-limit and queue libraries, unchanged, against
// a Redis-protocol server: Go libraries in-process (redis_rate, ulule/limiter,
// throttled, rueidis), Node libraries (rate-limiter-flexible, express-rate-limit
// with rate-limit-redis, bull, bullmq) and Python's limits as child processes.
//
// The package has no code of its own beyond this comment; everything is in
// its tests. Invariants the tests keep:
//   - The server under test is an in-process Turnstile (one per test), or the
//     server at TURNSTILE_LIBTEST_ADDR when that is set (to validate the tests
//     against redis-server).
//   - Every test writes only keys under its own unique prefix, so tests never
//     see each other's keys and never need FLUSHALL on a shared server.
//   - A test asserts outcomes the library reports (allowed, remaining,
//     denial, job results), so it fails when the server answers wrongly.
//   - A test needing node, node_modules or Debian's python3-limits skips when
//     they are missing, unless TURNSTILE_REQUIRE_LIBS=1, when it fails.
package libtest
