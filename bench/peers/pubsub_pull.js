// Node.js peer of the Pub/Sub pull benchmark: receives and acknowledges messages of 1 KiB from a
// subscription of the Pub/Sub emulator through @google-cloud/pubsub's streaming pull
// (subscription.on('message') + message.ack()).
//
// The subscription must already hold N messages, and the warm-up subscription W: scripts/bench.sh
// seeds fresh ones (the warm-up's on topic bench-pull-warmup) before every run with
// `pubsub_admin.js seed` (another process, so seeding costs this process neither CPU nor memory).
// Without --subscription / --warmup-subscription, this script seeds them itself the same way and
// deletes them at the end.
//
// Two phases, each with its own subscriber (streams opened and closed) on its own subscription: a
// warm-up that takes W messages, then the measured one that takes N. (The emulator holds a
// message that a closing stream had outstanding for about a minute, so a warm-up on the measured
// subscription could stall the measured phase.) The measured window runs from opening the
// subscriber to the end of close(), which sends the outstanding acknowledgements; messages the
// stream delivered past the N-th are nacked by close() and are not counted.
//
//   PUBSUB_EMULATOR_HOST=127.0.0.1:8085 node bench/peers/pubsub_pull.js \
//       [--subscription SUB --warmup-subscription SUB] --messages N --warmup W [--streams S]
//
// The emulator serves at most 100 messages per StreamingPull response, about 1.9k messages/s per
// stream (docs/performance.md): compare clients by CPU per message, not by messages/s.
'use strict';

const {execFileSync} = require('node:child_process');
const path = require('node:path');
const {PubSub} = require('@google-cloud/pubsub');
const {parseArgs, requireEnv, measure, printResult, die} = require('./common');

const args = parseArgs({
  messages: 20000,
  warmup: 2000,
  project: 'bench',
  topic: 'bench-pull',
  subscription: '',
  warmupSubscription: '',
  warmupTopic: 'bench-pull-warmup',
  streams: 1,
  maxOutstanding: 1000,
});
requireEnv('PUBSUB_EMULATOR_HOST');

// Receives and acknowledges `count` messages with a fresh subscriber, then closes it.
async function receive(pubsub, name, count) {
  const subscription = pubsub.subscription(name, {
    flowControl: {maxMessages: args.maxOutstanding, allowExcessMessages: false},
    streamingOptions: {maxStreams: args.streams},
  });
  let received = 0;
  await new Promise((resolve, reject) => {
    subscription.on('error', reject);
    subscription.on('message', message => {
      if (received >= count) return;  // left for close() to nack
      message.ack();
      if (++received === count) resolve();
    });
  });
  await subscription.close();
}

// Runs pubsub_admin.js (seed or delete) in a process of its own.
function admin(...argv) {
  execFileSync(
    process.execPath,
    [path.join(__dirname, 'pubsub_admin.js'), ...argv, '--project', args.project],
    {stdio: 'inherit'},
  );
}

async function main() {
  const pubsub = new PubSub({projectId: args.project});
  const own = [];
  // The named subscription, or a fresh one on `topic` seeded with `count` messages.
  const subscriptionFor = (given, topic, count, suffix) => {
    if (given) return given;
    const name = `bench-pull-node-${process.pid}${suffix}`;
    admin('seed', '--topic', topic, '--subscription', name, '--messages', String(count));
    own.push(name);
    return name;
  };
  const name = subscriptionFor(args.subscription, args.topic, args.messages, '');
  if (args.warmup > 0) {
    const warm =
      subscriptionFor(args.warmupSubscription, args.warmupTopic, args.warmup, '-warmup');
    await receive(pubsub, warm, args.warmup);
  }
  const m = await measure(() => receive(pubsub, name, args.messages));
  printResult('pubsub_pull', args.messages, m, {streams: args.streams});
  for (const s of own) admin('delete', '--subscription', s);
}

main().then(
  () => process.exit(0),
  e => die(`pubsub_pull: ${e.stack || e}`),
);
