'use strict';
// express-rate-limit with rate-limit-redis's RedisStore (node-redis client),
// unchanged, in a real express app on a free loopback port, driven by real
// HTTP requests: 200s up to the limit, then 429 with the rate-limit headers,
// and never a 500 (a store failure answers 500: an outage, not a limiter).
const express = require('express');
const { rateLimit } = require('express-rate-limit');
const { RedisStore } = require('rate-limit-redis');
const { createClient } = require('redis');
const { env, check, fail, run } = require('./lib');

const { url, prefix } = env();
const LIMIT = 3;

run('express-rate-limit with rate-limit-redis', async () => {
  const client = createClient({ url, socket: { reconnectStrategy: false } });
  client.on('error', (err) => fail(`node-redis client error: ${err.message}`));
  await client.connect();

  const app = express();
  app.use(rateLimit({
    windowMs: 60 * 1000,
    limit: LIMIT,
    standardHeaders: 'draft-6',
    legacyHeaders: false,
    store: new RedisStore({
      sendCommand: (...args) => client.sendCommand(args),
      prefix: `${prefix}erl:`,
    }),
  }));
  app.get('/', (req, res) => res.send('hello'));
  const server = await new Promise((resolve, reject) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
    s.on('error', reject);
  });
  const base = `http://127.0.0.1:${server.address().port}/`;

  try {
    for (let i = 1; i <= LIMIT + 1; i++) {
      const res = await fetch(base, { signal: AbortSignal.timeout(5000) });
      const body = await res.text();
      const h = (name) => res.headers.get(name);
      if (res.status >= 500) fail(`request ${i}: HTTP ${res.status} (store failure?): ${body.slice(0, 500)}`);
      check(h('ratelimit-limit') === String(LIMIT), `request ${i}: RateLimit-Limit ${h('ratelimit-limit')}, want ${LIMIT}`);
      check(h('ratelimit-policy') === `${LIMIT};w=60`, `request ${i}: RateLimit-Policy ${h('ratelimit-policy')}, want ${LIMIT};w=60`);
      const reset = Number(h('ratelimit-reset'));
      check(reset >= 55 && reset <= 60, `request ${i}: RateLimit-Reset ${h('ratelimit-reset')}, want about 60`);
      if (i <= LIMIT) {
        check(res.status === 200 && body === 'hello', `request ${i}: HTTP ${res.status} ${body.slice(0, 200)}, want 200 hello`);
        check(h('ratelimit-remaining') === String(LIMIT - i), `request ${i}: RateLimit-Remaining ${h('ratelimit-remaining')}, want ${LIMIT - i}`);
      } else {
        check(res.status === 429, `request ${i}: HTTP ${res.status} ${body.slice(0, 200)}, want 429`);
        check(h('ratelimit-remaining') === '0', `request ${i}: RateLimit-Remaining ${h('ratelimit-remaining')}, want 0`);
        const retry = Number(h('retry-after'));
        check(retry >= 55 && retry <= 60, `request ${i}: Retry-After ${h('retry-after')}, want about 60`);
      }
    }
  } finally {
    server.close();
    await client.quit();
  }
});
