'use strict';
// rate-limiter-flexible's RateLimiterRedis, unchanged, with ioredis
// (`node ratelimiterflexible.js ioredis`) or node-redis
// (`node ratelimiterflexible.js redis`, useRedisPackage): consume through a
// burst, the denial, get, penalty, reward, delete and block.
const { RateLimiterRedis, RateLimiterRes } = require('rate-limiter-flexible');
const { env, check, fail, run } = require('./lib');

const which = process.argv[2];
if (which !== 'ioredis' && which !== 'redis') fail('usage: node ratelimiterflexible.js ioredis|redis');
const { url, prefix } = env();

async function connect() {
  if (which === 'ioredis') {
    const Redis = require('ioredis');
    const client = new Redis(url, { maxRetriesPerRequest: 1, lazyConnect: true });
    await client.connect();
    return { client, opts: {}, close: () => client.quit() };
  }
  const { createClient } = require('redis');
  const client = createClient({ url, socket: { reconnectStrategy: false } });
  client.on('error', (err) => fail(`node-redis client error: ${err.message}`));
  await client.connect();
  return { client, opts: { useRedisPackage: true }, close: () => client.quit() };
}

// rejection returns what consume rejected with, failing if it resolved or
// rejected with an error instead of a RateLimiterRes (a store failure).
async function rejection(promise, what) {
  try {
    const res = await promise;
    fail(`${what}: allowed (${JSON.stringify(res)}), want rejected`);
  } catch (err) {
    if (!(err instanceof RateLimiterRes)) fail(`${what}: store error instead of a rate-limit rejection: ${err && err.stack ? err.stack : err}`);
    return err;
  }
}

run(`rate-limiter-flexible with ${which}`, async () => {
  const { client, opts, close } = await connect();
  const rl = new RateLimiterRedis({ storeClient: client, keyPrefix: `${prefix}rlflx`, points: 5, duration: 60, ...opts });

  for (let i = 1; i <= 5; i++) {
    const res = await rl.consume('user');
    check(res.consumedPoints === i && res.remainingPoints === 5 - i,
      `consume ${i}: consumed ${res.consumedPoints} remaining ${res.remainingPoints}, want ${i} and ${5 - i}`);
    check(res.msBeforeNext > 55000 && res.msBeforeNext <= 60000, `consume ${i}: msBeforeNext ${res.msBeforeNext}, want about 60000`);
    check(res.isFirstInDuration === (i === 1), `consume ${i}: isFirstInDuration ${res.isFirstInDuration}`);
  }
  const denied = await rejection(rl.consume('user'), 'consume 6 of 5');
  check(denied.remainingPoints === 0 && denied.consumedPoints === 6,
    `denial: consumed ${denied.consumedPoints} remaining ${denied.remainingPoints}, want 6 and 0`);
  check(denied.msBeforeNext > 55000 && denied.msBeforeNext <= 60000, `denial: msBeforeNext ${denied.msBeforeNext}, want about 60000`);

  const got = await rl.get('user');
  check(got && got.consumedPoints === 6 && got.remainingPoints === 0, `get: ${JSON.stringify(got)}, want 6 consumed`);
  check((await rl.get('never-seen')) === null, 'get of an unknown key: want null');

  const multi = await rl.consume('multi', 3);
  check(multi.consumedPoints === 3 && multi.remainingPoints === 2, `consume 3: ${JSON.stringify(multi)}, want 2 remaining`);
  const pen = await rl.penalty('multi', 1);
  check(pen.consumedPoints === 4, `penalty 1: consumed ${pen.consumedPoints}, want 4`);
  const rew = await rl.reward('multi', 2);
  check(rew.consumedPoints === 2, `reward 2: consumed ${rew.consumedPoints}, want 2`);

  check((await rl.delete('user')) === true, 'delete: want true');
  check((await rl.get('user')) === null, 'get after delete: want null');
  const again = await rl.consume('user');
  check(again.consumedPoints === 1 && again.remainingPoints === 4, `consume after delete: ${JSON.stringify(again)}, want 4 remaining`);

  // block sets the key past the limit for 10 s (MULTI SET EX, PTTL).
  const blocked = await rl.block('blocked', 10);
  check(blocked.msBeforeNext > 8000 && blocked.msBeforeNext <= 10000, `block: msBeforeNext ${blocked.msBeforeNext}, want about 10000`);
  const stillBlocked = await rejection(rl.consume('blocked'), 'consume while blocked');
  check(stillBlocked.msBeforeNext > 8000 && stillBlocked.msBeforeNext <= 10000,
    `consume while blocked: msBeforeNext ${stillBlocked.msBeforeNext}, want about 10000`);

  await close();
});
