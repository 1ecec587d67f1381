'use strict';
// bullmq, unchanged: a Queue and a Worker (ioredis connections), one job
// added, processed and its result read back, end to end; a QueueEvents
// (XREAD BLOCK on the queue's event stream) tells when it finished.
const { Queue, QueueEvents, Worker } = require('bullmq');
const { env, check, run } = require('./lib');

const { url, prefix } = env();

run('bullmq', async () => {
  const { hostname, port } = new URL(url);
  const connection = { host: hostname, port: Number(port), maxRetriesPerRequest: null };
  const opts = { connection, prefix: `${prefix}bullmq` };
  const queue = new Queue('libtest', opts);
  const events = new QueueEvents('libtest', opts);
  let worker;
  try {
    await events.waitUntilReady();
    let seen = null;
    const completed = new Promise((resolve, reject) => {
      worker = new Worker('libtest', async (job) => {
        seen = job.data;
        return { doubled: job.data.n * 2 };
      }, opts);
      worker.on('completed', (job, result) => resolve({ job, result }));
      worker.on('failed', (job, err) => reject(new Error(`job failed: ${err && err.message}`)));
      worker.on('error', (err) => reject(new Error(`worker error: ${err && err.message}`)));
    });
    const job = await queue.add('double', { n: 21 }, { attempts: 1 });
    const finished = await job.waitUntilFinished(events, 10000);
    check(finished && finished.doubled === 42, `waitUntilFinished gave ${JSON.stringify(finished)}, want {"doubled":42}`);
    const done = await completed;
    check(done.job.id === job.id, `completed job ${done.job.id}, want ${job.id}`);
    check(seen && seen.n === 21, `processor saw ${JSON.stringify(seen)}, want {"n":21}`);
    check(done.result && done.result.doubled === 42, `result ${JSON.stringify(done.result)}, want {"doubled":42}`);

    const stored = await queue.getJob(job.id);
    check(stored && stored.returnvalue && stored.returnvalue.doubled === 42,
      `stored job ${job.id}: ${JSON.stringify(stored && stored.returnvalue)}, want {"doubled":42}`);
    check((await stored.getState()) === 'completed', `job state ${await stored.getState()}, want completed`);
    const counts = await queue.getJobCounts('completed', 'waiting', 'active', 'failed', 'delayed');
    check(counts.completed === 1 && counts.waiting === 0 && counts.active === 0 && counts.failed === 0 && counts.delayed === 0,
      `job counts ${JSON.stringify(counts)}, want 1 completed and nothing else`);
  } finally {
    if (worker) await worker.close();
    await events.close();
    await queue.close();
  }
});
