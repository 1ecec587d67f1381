'use strict';
// bull (Redis-backed job queue), unchanged: one job added, processed by the
// queue's own worker, and its result read back, end to end.
const Queue = require('bull');
const { env, check, run } = require('./lib');

const { url, prefix } = env();

run('bull', async () => {
  const queue = new Queue('libtest', url, { prefix: `${prefix}bull` });
  try {
    let seen = null;
    queue.process(async (job) => {
      seen = job.data;
      return { doubled: job.data.n * 2 };
    });
    const job = await queue.add({ n: 21 }, { attempts: 1 });
    const result = await job.finished();
    check(seen && seen.n === 21, `processor saw ${JSON.stringify(seen)}, want {"n":21}`);
    check(result && result.doubled === 42, `job result ${JSON.stringify(result)}, want {"doubled":42}`);

    const stored = await queue.getJob(job.id);
    check(stored !== null, `getJob(${job.id}): not found`);
    check(await stored.isCompleted(), `job ${job.id}: state ${await stored.getState()}, want completed`);
    check(stored.returnvalue && stored.returnvalue.doubled === 42, `stored return value ${JSON.stringify(stored.returnvalue)}`);
    const counts = await queue.getJobCounts();
    check(counts.completed === 1 && counts.waiting === 0 && counts.active === 0 && counts.failed === 0,
      `job counts ${JSON.stringify(counts)}, want 1 completed and nothing else`);
  } finally {
    await queue.close();
  }
});
