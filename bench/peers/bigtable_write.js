// Node.js peer of bench/bigtable_write.cc: writes N rows of 10 cells x 100 B to the Bigtable
// emulator through @google-cloud/bigtable's bulk-mutation path (Table.mutate, one MutateRows
// call per batch, with the library's own retry of failed entries), in batches of 100 rows with
// 10 batches in flight (the raw loop's 10 threads; the sink's 1,000 entries in flight). Same
// table, family, row keys, qualifiers, timestamps and values as the C++ benchmark. A warm-up of
// W rows runs first in the same process, then N rows are measured.
//
//   BIGTABLE_EMULATOR_HOST=127.0.0.1:8086 node bench/peers/bigtable_write.js --rows N --warmup W
//
// Client-side metrics are switched off (metricsEnabled: false): against the emulator they can
// only fail to export, and leaving them on would charge the peer for work that buys nothing here.
'use strict';

const {Bigtable} = require('@google-cloud/bigtable');
const {parseArgs, requireEnv, measure, printResult, die} = require('./common');

const args = parseArgs({
  rows: 100000,
  warmup: 25000,
  project: 'bench',
  instance: 'bench',
  table: 'bench-write',
  batch: 100,
  concurrency: 10,
});
requireEnv('BIGTABLE_EMULATOR_HOST');

const ALREADY_EXISTS = 6;
const CELLS = 10;
const VALUE = Buffer.alloc(100, 'v');
const QUALIFIERS = Array.from({length: CELLS}, (_, c) => `c${c}`);

// The C++ benchmark's RowKey: "%08llx#%lld" of (i * 2654435761) mod 2^32, then i.
function rowKey(i) {
  const hash = Math.imul(i, 2654435761 | 0) >>> 0;
  return `${hash.toString(16).padStart(8, '0')}#${i}`;
}

function entry(i) {
  const cells = {};
  for (const q of QUALIFIERS) cells[q] = {value: VALUE, timestamp: 1000};
  return {key: rowKey(i), method: 'insert', data: {f: cells}};
}

// `concurrency` workers, each taking the next batch of rows and awaiting its MutateRows.
async function writeRows(table, first, n) {
  let next = first;
  const end = first + n;
  const worker = async () => {
    while (next < end) {
      const start = next;
      next = Math.min(end, start + args.batch);
      const entries = [];
      for (let i = start; i < next; i++) entries.push(entry(i));
      await table.mutate(entries);
    }
  };
  await Promise.all(Array.from({length: args.concurrency}, worker));
}

async function main() {
  if (args.rows + args.warmup >= 2 ** 31) die('too many rows for the key function');
  const bigtable = new Bigtable({projectId: args.project, metricsEnabled: false});
  const instance = bigtable.instance(args.instance);
  const table = instance.table(args.table);
  try {
    await table.create({families: [{name: 'f', rule: {versions: 1}}]});
  } catch (e) {
    if (e.code !== ALREADY_EXISTS) throw e;
  }
  if (args.warmup > 0) await writeRows(table, 0, args.warmup);
  const m = await measure(() => writeRows(table, 0, args.rows));
  printResult('bigtable_write', args.rows, m);
}

main().then(
  () => process.exit(0),
  e => die(`bigtable_write: ${e.stack || e}`),
);
