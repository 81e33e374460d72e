// Node.js peer of bench/spanner_write.cc: writes N rows to Spanner with
// @google-cloud/spanner's Database.batchWriteAtLeastOnce (one BatchWrite call per batch of 500
// mutation groups, one insert_or_update each), 16 batches in flight, through the same in-repo
// BatchWrite stand-in in front of the emulator, started here the same way the C++ benchmark
// starts it (its own process, `--no-apply`: every group answered OK without a commit, so only
// the client's CPU is measured). Same database, table, ids and values as the C++ benchmark.
//
//   SPANNER_EMULATOR_HOST=127.0.0.1:9010 SPANNER_STANDIN=build/tests/spanner_standin \
//     node bench/peers/spanner_write.js --rows N --warmup W
'use strict';

const {spawn} = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');
const readline = require('readline');
const {parseArgs, requireEnv, measure, printResult, die} = require('./common');

const args = parseArgs({
  rows: 100000,
  warmup: 25000,
  project: 'bench',
  instance: 'bench',
  database: 'rows',
  batch: 500,
  concurrency: 16,
});
const emulator = requireEnv('SPANNER_EMULATOR_HOST');
const standinPath =
  process.env.SPANNER_STANDIN || path.join(__dirname, '..', '..', 'build', 'tests', 'spanner_standin');
const NOTE = 'x'.repeat(200);

// Starts the stand-in on a free port; resolves with its process and endpoint.
function startStandIn() {
  const ddl = path.join(os.tmpdir(), `gcpstream-bench-spanner-${process.pid}.ddl`);
  fs.writeFileSync(
    ddl,
    'CREATE TABLE BenchRows (Id INT64 NOT NULL, Amount FLOAT64, Note STRING(MAX)) PRIMARY KEY (Id);',
  );
  const db = `projects/${args.project}/instances/${args.instance}/databases/${args.database}`;
  const child = spawn(
    standinPath,
    ['--emulator', emulator, '--database', db, '--ddl-file', ddl, '--no-apply'],
    {stdio: ['ignore', 'pipe', 'inherit']},
  );
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('the stand-in did not start in 60 s')), 60000);
    child.on('error', e => reject(new Error(`starting ${standinPath}: ${e.message}`)));
    child.on('exit', code => reject(new Error(`the stand-in exited (${code}) before listening`)));
    readline.createInterface({input: child.stdout}).on('line', line => {
      const m = /listening on (\S+)/.exec(line);
      if (!m) return;
      clearTimeout(timer);
      fs.rmSync(ddl, {force: true});
      resolve({child, endpoint: m[1]});
    });
  });
}

// One BatchWrite call for rows [start, end); resolves with the number of groups not applied.
function writeBatch(database, MutationGroup, start, end) {
  const groups = [];
  for (let i = start; i < end; i++) {
    const group = new MutationGroup();
    group.upsert('BenchRows', {Id: String(i), Amount: i / 7, Note: NOTE});
    groups.push(group);
  }
  return new Promise((resolve, reject) => {
    let failed = 0;
    let reported = 0;
    database
      .batchWriteAtLeastOnce(groups)
      .on('data', response => {
        reported += response.indexes.length;
        if (response.status && response.status.code !== 0) failed += response.indexes.length;
      })
      .on('error', reject)
      .on('end', () => resolve(failed + (groups.length - reported)));
  });
}

async function writeRows(database, MutationGroup, first, n) {
  let next = first;
  const end = first + n;
  let failed = 0;
  const worker = async () => {
    while (next < end) {
      const start = next;
      next = Math.min(end, start + args.batch);
      failed += await writeBatch(database, MutationGroup, start, next);
    }
  };
  await Promise.all(Array.from({length: args.concurrency}, worker));
  if (failed > 0) die(`spanner_write: ${failed} groups were not applied`);
}

async function main() {
  const {child, endpoint} = await startStandIn();
  // The client reads the emulator address when it is constructed: point it at the stand-in.
  process.env.SPANNER_EMULATOR_HOST = endpoint;
  // With its default multiplexed sessions, this client version fails against emulator 1.5.28
  // ("Unable to release unknown resource", measured): use a regular session pool, as the C++
  // sides do.
  process.env.GOOGLE_CLOUD_SPANNER_MULTIPLEXED_SESSIONS ??= 'false';
  const {Spanner, MutationGroup} = require('@google-cloud/spanner');
  const spanner = new Spanner({projectId: args.project});
  const database = spanner.instance(args.instance).database(args.database);
  try {
    if (args.warmup > 0) await writeRows(database, MutationGroup, 0, args.warmup);
    const m = await measure(() => writeRows(database, MutationGroup, 0, args.rows));
    printResult('spanner_write', args.rows, m);
  } finally {
    await database.close();
    child.removeAllListeners('exit');
    child.kill('SIGTERM');
  }
}

main().then(
  () => process.exit(0),
  e => die(`spanner_write: ${e.stack || e}`),
);
