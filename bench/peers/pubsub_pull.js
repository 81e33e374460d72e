// Node.js peer of the Pub/Sub pull benchmark: receives and acknowledges messages of 1 KiB from a
// subscription of the Pub/Sub emulator through @google-cloud/pubsub's streaming pull
// (subscription.on('message') + message.ack()).
//
// The subscription must already hold at least W + N messages: scripts/bench.sh seeds a fresh one
// before every run with `pubsub_admin.js seed` (another process, so seeding costs this process
// neither CPU nor memory). Without --subscription, this script seeds one itself the same way and
// deletes it at the end.
//
// Two phases, each with its own subscriber (streams opened and closed): a warm-up that takes W
// messages, then the measured one that takes N. The measured window runs from opening the
// subscriber to the end of close(), which sends the outstanding acknowledgements; messages the
// stream delivered past the N-th are nacked by close() and are not counted.
//
//   PUBSUB_EMULATOR_HOST=127.0.0.1:8085 node bench/peers/pubsub_pull.js \
//       [--subscription SUB] --messages N --warmup W [--streams S]
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

async function main() {
  const pubsub = new PubSub({projectId: args.project});
  let name = args.subscription;
  const ownSubscription = !name;
  if (ownSubscription) {
    name = `bench-pull-node-${process.pid}`;
    const admin = path.join(__dirname, 'pubsub_admin.js');
    execFileSync(
      process.execPath,
      [
        admin, 'seed',
        '--project', args.project,
        '--topic', args.topic,
        '--subscription', name,
        '--messages', String(args.messages + args.warmup),
      ],
      {stdio: 'inherit'},
    );
  }
  if (args.warmup > 0) await receive(pubsub, name, args.warmup);
  const m = await measure(() => receive(pubsub, name, args.messages));
  printResult('pubsub_pull', args.messages, m, {streams: args.streams});
  if (ownSubscription) {
    execFileSync(
      process.execPath,
      [path.join(__dirname, 'pubsub_admin.js'), 'delete', '--project', args.project,
        '--subscription', name],
      {stdio: 'inherit'},
    );
  }
}

main().then(
  () => process.exit(0),
  e => die(`pubsub_pull: ${e.stack || e}`),
);
