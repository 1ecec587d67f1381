'use strict';
// Shared helpers of the library checks: the server address, a unique key
// prefix, a hard time limit, and assertions that name what failed.

const DEFAULT_TIMEOUT_MS = 20000;

// env returns the settings every check takes from its environment:
// REDIS_URL (redis://host:port) and LIBTEST_PREFIX (keys and queue names
// start with it, so checks never touch each other's keys).
function env() {
  const url = process.env.REDIS_URL;
  if (!url) fail('REDIS_URL is not set (want redis://host:port)');
  const prefix = process.env.LIBTEST_PREFIX || `lt:node:${process.pid}:${Date.now()}:`;
  return { url, prefix };
}

// fail prints a clear message and exits non-zero.
function fail(msg) {
  console.error(`FAIL: ${msg}`);
  process.exit(1);
}

// check fails with msg unless cond holds.
function check(cond, msg) {
  if (!cond) fail(msg);
}

// run runs main under a hard time limit: the process exits 0 when main
// resolves, 1 when it rejects, 2 when the limit passes first.
function run(name, main, timeoutMs = DEFAULT_TIMEOUT_MS) {
  const timer = setTimeout(() => {
    console.error(`FAIL: ${name}: no result within ${timeoutMs} ms`);
    process.exit(2);
  }, timeoutMs);
  main().then(
    () => {
      clearTimeout(timer);
      console.log(`ok: ${name}`);
      process.exit(0);
    },
    (err) => {
      clearTimeout(timer);
      fail(`${name}: ${err && err.stack ? err.stack : err}`);
    },
  );
}

module.exports = { env, fail, check, run };
