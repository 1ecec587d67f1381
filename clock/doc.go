// Package clock is Turnstile's single source of time.
//
// Every command reads the time once, from a Clock, and passes it down as
// int64 nanoseconds since the Unix epoch. Nothing else in the server calls
// time.Now for a time it stores or compares with stored times: the GCRA
// algorithm, the keyspace, expiry and log replay all take "now" as a
// parameter, which keeps them deterministic and testable.
//
// # The server clock: Disciplined
//
// A rate limiter stores absolute times (GCRA theoretical arrival times,
// expiries), so how its clock moves decides who is let through. A plain wall
// clock steps (an operator, NTP's step mode, a VM resumed, a bad real-time
// clock at boot corrected later); a monotonic clock anchored to the wall
// clock once at start-up ignores those steps while it runs, and then applies
// the whole step at the next restart. Either way a step lands at once:
//
//   - forward by S: every stored time is S closer to the past; with S at least
//     a limit's period every bucket is full again (every limit reset) and
//     keys with a TTL under S vanish;
//   - backward by S: every stored time is S further in the future; a limited
//     client stays blocked for S plus its real remaining time.
//
// Disciplined serves time = wall + offset. The offset is what the server time
// leads the wall clock by (negative: lags it). A step of the wall clock is
// not followed: it becomes offset (the server time continues smoothly), and
// the offset then moves toward zero by at most SlewPercent of the elapsed
// time, so while it converges the server clock runs at most 10% faster
// (after a forward step) or slower (after a backward step) than real time,
// measured by the monotonic clock:
//
//   - it never goes backwards and never stands still (its rate stays between
//     0.9 and 1.1);
//   - every limit stays within 10% of its configured rate: after a forward
//     step a limit of N per period admits at most 1.1 N per real period (a
//     600 s TTL ends after 545 s), after a backward step at least 0.9 N (a
//     600 s TTL lasts 667 s); no limit is reset and no one is blocked for
//     the size of the step;
//   - the step is absorbed in 10 times its size: a 1 h step in 10 h, a leap
//     second in 10 s, NTP's 128 ms step threshold in 1.3 s. Small steps
//     need no special case: they are simply gone within seconds.
//
// Why 10%: the rate bounds two errors at once. Limits are off by at most
// that fraction while slewing; absolute times (TIME, EXPIREAT, PXAT, and the
// times cluster nodes compare) are off the wall clock by the offset until it
// is absorbed. A slower slew keeps limits tighter but leaves the offset for
// longer (ntpd's 0.05% would take 83 days for an hour); a faster one
// converges sooner but lets every limit through that much more often (25%:
// 4 h, with limits off by a quarter). A tenth is the compromise: limits
// stay within 10% of what is configured, and an hour's step is gone within
// a working day.
//
// Between two readings of the wall clock (at most resyncEvery apart while
// the clock is read, at the next read otherwise) the clock follows the
// monotonic clock alone, along a segment: a line through (m0, t0) whose
// slope is 1 minus or plus the slew until the offset it carries reaches 0,
// then 1. A reading is one atomic load, one monotonic reading and a few
// integer operations; no lock. A segment serves readings strictly before
// its horizon; the first reading at or after it takes the mutex, reads the
// wall clock and publishes the next segment, which starts at the old
// horizon with the old segment's value there. So every reading made with
// the old segment lies before the horizon, every one made with the new one
// at or after it, and time as a function of the monotonic clock is one
// continuous, non-decreasing line: no reader, in whatever order goroutines
// load segments, ever sees time go back.
//
// A change of the wall clock against the monotonic clock of StepThreshold or
// more between two readings is a step: it is logged as a warning (size,
// direction, how long the slew will take) and counted (Status). Smaller
// changes are slewed silently, and a change under NoiseBand (1 ms) is not
// followed at all: the wall and monotonic clocks are read at one instant,
// and Linux disciplines both together, so such a change is reading noise
// (a thread descheduled mid-read); slewing it would run the clock fast in
// bursts that a limit with a period of tens of milliseconds would feel.
//
// # Restarts
//
// The offset and the last time are kept in a small state file (StateFile in
// the data directory; see Restore and Save), written once a second and at
// shutdown. At start-up the clock continues from it: the slew goes on as if
// the server had kept running through the downtime (measured by the wall
// clock), so the offset left by a step while running is neither lost nor
// applied at once. If the wall clock is behind the last wall reading (it went
// back while the server was down, or before the state was last written),
// the clock starts at the saved time and slews from there: a restart never
// moves time back. A missing state file (first start) or an unreadable one
// (logged as a warning) starts the clock at the wall clock.
//
// Limits of what a clock can know: a forward step while the server is down
// cannot be told from a longer downtime and is taken as one; after a crash
// the saved time may be up to a second old. Go's monotonic clock does not
// advance while the machine is suspended, so a resume looks like a forward
// step and is slewed like one. To make the server take the wall clock as it
// is (say, after fixing a clock known to have been wrong), stop it, delete
// the state file, and start it again.
//
// # Other clocks
//
// Floor wraps the server's clock on a cluster node (the time never falls
// below the last applied entry's). Manual is a clock for tests; Monotonic
// the anchored clock the server used before Disciplined.
package clock
