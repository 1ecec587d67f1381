"""Python `limits` (Debian's python3-limits), unchanged, with RedisStorage:
the fixed window and the moving window strategies through a burst, the
denial and the window statistics.

Run with /usr/bin/python3 (Debian's packages), REDIS_URL=redis://host:port
and LIBTEST_PREFIX (unique per run: the identifiers start with it).
Exits 0 on success, 1 with a FAIL line on a wrong outcome, 2 on timeout.
"""

import os
import signal
import sys
import time

TIMEOUT_S = 20


def fail(msg):
    print(f"FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


def check(cond, msg):
    if not cond:
        fail(msg)


def on_timeout(signum, frame):
    print(f"FAIL: limits: no result within {TIMEOUT_S} s", file=sys.stderr)
    sys.exit(2)


def burst(name, limiter, item, ident):
    """Hits item 5 times (allowed), then once more (denied), and checks
    test() and get_window_stats() after each."""
    now = time.time()
    for i in range(1, 6):
        check(limiter.test(item, ident), f"{name}: test() before hit {i}: want True")
        check(limiter.hit(item, ident), f"{name}: hit {i} of 5: denied, want allowed")
        reset, remaining = limiter.get_window_stats(item, ident)
        check(remaining == 5 - i, f"{name}: after hit {i}: remaining {remaining}, want {5 - i}")
        check(now + 50 <= reset <= now + 62, f"{name}: after hit {i}: reset {reset}, want about {now + 60:.0f}")
    check(not limiter.test(item, ident), f"{name}: test() after 5 hits: want False")
    check(not limiter.hit(item, ident), f"{name}: hit 6 of 5: allowed, want denied")
    reset, remaining = limiter.get_window_stats(item, ident)
    check(remaining == 0, f"{name}: after the denial: remaining {remaining}, want 0")
    # A cost of 2 on a fresh identifier counts twice.
    fresh = ident + ":cost"
    check(limiter.hit(item, fresh, cost=2), f"{name}: hit with cost 2: denied, want allowed")
    check(limiter.get_window_stats(item, fresh)[1] == 3, f"{name}: remaining after cost 2: want 3")
    check(not limiter.hit(item, fresh, cost=4), f"{name}: hit with cost 4 and 3 left: allowed, want denied")
    # clear() forgets the identifier.
    limiter.clear(item, ident)
    check(limiter.test(item, ident), f"{name}: test() after clear: want True")
    check(limiter.get_window_stats(item, ident)[1] == 5, f"{name}: remaining after clear: want 5")


def main():
    signal.signal(signal.SIGALRM, on_timeout)
    signal.alarm(TIMEOUT_S)
    url = os.environ.get("REDIS_URL")
    if not url:
        fail("REDIS_URL is not set (want redis://host:port)")
    prefix = os.environ.get("LIBTEST_PREFIX") or f"lt:py:{os.getpid()}:{time.time_ns()}:"

    from limits import parse, storage, strategies

    st = storage.storage_from_string(url)
    check(type(st).__name__ == "RedisStorage", f"storage for {url} is {type(st).__name__}, want RedisStorage")
    check(st.check(), "RedisStorage.check(): the server did not answer PING")
    item = parse("5/minute")
    burst("fixed window", strategies.FixedWindowRateLimiter(st), item, prefix + "fixed")
    burst("moving window", strategies.MovingWindowRateLimiter(st), item, prefix + "moving")
    print("ok: limits fixed and moving window")


if __name__ == "__main__":
    try:
        main()
    except Exception as exc:  # a store error: say so in one line, then the trace
        import traceback

        traceback.print_exc()
        fail(f"limits: {type(exc).__name__}: {exc}")
