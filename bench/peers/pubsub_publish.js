// Node.js peer of bench/pubsub_publish.cc: publishes N messages of 1 KiB to the Pub/Sub emulator
// through @google-cloud/pubsub with the same batching as gcpstream's sink and the raw loop
// (100 messages, 1 MiB or 10 ms per request) and the same bound on unacknowledged publishes
// (1,000 messages = 10 requests of 100). A warm-up of W messages runs first in the same process
// (so V8 has compiled the hot paths), then N messages are measured, ending when the last publish
// has been acknowledged by the emulator. The bound on outstanding publishes is kept by this script
// (the library's own flowControlled() publisher keeps every publish promise until all(), which
// would grow the heap with N).
//
//   PUBSUB_EMULATOR_HOST=127.0.0.1:8085 node bench/peers/pubsub_publish.js --messages N --warmup W
'use strict';

const {PubSub} = require('@google-cloud/pubsub');
const {parseArgs, requireEnv, measure, printResult, die, Window} = require('./common');

const args = parseArgs({
  messages: 200000,
  warmup: 50000,
  project: 'bench',
  topic: 'bench-publish',
  batchMessages: 100,
  maxInFlight: 1000,
});
requireEnv('PUBSUB_EMULATOR_HOST');

const ALREADY_EXISTS = 6;
const payload = Buffer.alloc(1024, 'x');

async function publishN(topic, n) {
  const window = new Window();
  let failed = 0;
  let firstError;
  const done = () => window.done();
  const fail = e => {
    failed++;
    firstError ??= e;
    window.done();
  };
  for (let i = 0; i < n; i++) {
    if (window.outstanding >= args.maxInFlight) await window.drainTo(args.maxInFlight - 1);
    window.add();
    topic.publishMessage({data: payload}).then(done, fail);
  }
  await window.drainTo(0);
  if (failed > 0) die(`${failed} publishes failed: ${firstError}`);
}

async function main() {
  const pubsub = new PubSub({projectId: args.project});
  try {
    await pubsub.createTopic(args.topic);
  } catch (e) {
    if (e.code !== ALREADY_EXISTS) throw e;
  }
  const topic = pubsub.topic(args.topic, {
    batching: {maxMessages: args.batchMessages, maxBytes: 1024 * 1024, maxMilliseconds: 10},
  });
  if (args.warmup > 0) await publishN(topic, args.warmup);
  const m = await measure(() => publishN(topic, args.messages));
  printResult('pubsub_publish', args.messages, m);
}

main().then(
  () => process.exit(0),
  e => die(`pubsub_publish: ${e.stack || e}`),
);
