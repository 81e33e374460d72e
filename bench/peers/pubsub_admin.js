// Topic and subscription chores for the pull benchmark, run by scripts/bench.sh between measured
// runs (never inside one):
//
//   node bench/peers/pubsub_admin.js seed   --topic T --subscription S --messages M
//       creates topic T if missing and a new subscription S on it, then publishes M messages of
//       1 KiB (batches of 1,000) so that S holds them all
//   node bench/peers/pubsub_admin.js delete --subscription S
//       deletes S (missing is fine)
'use strict';

const {PubSub} = require('@google-cloud/pubsub');
const {parseArgs, requireEnv, die, Window} = require('./common');

const command = process.argv[2];
const args = parseArgs(
  {project: 'bench', topic: 'bench-pull', subscription: '', messages: 0, ackDeadline: 60},
  process.argv.slice(3),
);
requireEnv('PUBSUB_EMULATOR_HOST');
if (!args.subscription) die('--subscription is required');

const ALREADY_EXISTS = 6;
const NOT_FOUND = 5;

async function seed(pubsub) {
  try {
    await pubsub.createTopic(args.topic);
  } catch (e) {
    if (e.code !== ALREADY_EXISTS) throw e;
  }
  const topic = pubsub.topic(args.topic, {
    batching: {maxMessages: 1000, maxBytes: 9 * 1024 * 1024, maxMilliseconds: 10},
  });
  await topic.createSubscription(args.subscription, {ackDeadlineSeconds: args.ackDeadline});
  const payload = Buffer.alloc(1024, 'x');
  const window = new Window();
  let failed = 0;
  for (let i = 0; i < args.messages; i++) {
    if (window.outstanding >= 10000) await window.drainTo(9999);
    window.add();
    topic.publishMessage({data: payload}).then(
      () => window.done(),
      () => {
        failed++;
        window.done();
      },
    );
  }
  await window.drainTo(0);
  if (failed > 0) die(`seeding: ${failed} publishes failed`);
}

async function remove(pubsub) {
  try {
    await pubsub.subscription(args.subscription).delete();
  } catch (e) {
    if (e.code !== NOT_FOUND) throw e;
  }
}

async function main() {
  const pubsub = new PubSub({projectId: args.project});
  if (command === 'seed') await seed(pubsub);
  else if (command === 'delete') await remove(pubsub);
  else die(`usage: node ${process.argv[1]} seed|delete --subscription S [--topic T --messages M]`);
  await pubsub.close();
}

main().then(
  () => process.exit(0),
  e => die(`pubsub_admin ${command}: ${e.stack || e}`),
);
