// Shared plumbing for the Node.js peer benchmarks: argument parsing, the measured window, and
// the one-line result every benchmark client prints for scripts/bench.sh to collect.
//
// The result line (one per process, on stdout):
//   RESULT bench=<workload> client=<client> records=<N> seconds=<wall> cpu_s=<cpu> peak_rss_kb=<kb>
// `records` counts only the measured records (not the warm-up); `seconds` and `cpu_s` cover
// the measured window only; `cpu_s` is user+system CPU of this process (all its threads), the
// same getrusage(RUSAGE_SELF) figure the C++ benchmarks read; `peak_rss_kb` is the process's
// lifetime peak resident set (ru_maxrss), in KiB.
'use strict';

// Off a Google Cloud machine, google-auth-library probes the metadata server once per process to
// learn whether it runs on GCE; against the emulators that probe only fails (with a warning) and
// adds start-up time. It happens outside the measured window either way.
process.env.METADATA_SERVER_DETECTION ??= 'none';

// Parses `--name value` and `--flag` arguments against a table of defaults. Numbers in the
// defaults make the option numeric; booleans make it a flag.
function parseArgs(defaults, argv = process.argv.slice(2)) {
  const out = {...defaults};
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (!arg.startsWith('--')) usage(defaults, `unexpected argument ${arg}`);
    let name = arg.slice(2);
    let value;
    const eq = name.indexOf('=');
    if (eq >= 0) {
      value = name.slice(eq + 1);
      name = name.slice(0, eq);
    }
    const key = name.replace(/-([a-z])/g, (_, c) => c.toUpperCase());
    if (!(key in defaults)) usage(defaults, `unknown option --${name}`);
    if (typeof defaults[key] === 'boolean') {
      out[key] = value === undefined ? true : value !== 'false';
      continue;
    }
    if (value === undefined) {
      if (i + 1 >= argv.length) usage(defaults, `--${name} needs a value`);
      value = argv[++i];
    }
    if (typeof defaults[key] === 'number') {
      const n = Number(value);
      if (!Number.isFinite(n) || n < 0) usage(defaults, `--${name}: not a number: ${value}`);
      out[key] = n;
    } else {
      out[key] = value;
    }
  }
  return out;
}

function usage(defaults, message) {
  const opts = Object.entries(defaults)
    .map(([k, v]) => `--${k.replace(/[A-Z]/g, c => '-' + c.toLowerCase())} (${JSON.stringify(v)})`)
    .join(' ');
  process.stderr.write(`${message}\nusage: node ${process.argv[1]} ${opts}\n`);
  process.exit(2);
}

function requireEnv(name) {
  const value = process.env[name];
  if (!value) {
    process.stderr.write(`${name} is not set (eval "$(scripts/emulators.sh env)")\n`);
    process.exit(2);
  }
  return value;
}

function cpuSeconds() {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
}

// Runs `fn` (async) and returns its wall and CPU seconds.
async function measure(fn) {
  const cpu0 = cpuSeconds();
  const t0 = process.hrtime.bigint();
  await fn();
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  return {seconds, cpu_s: cpuSeconds() - cpu0};
}

function printResult(bench, records, m, extra = {}) {
  const fields = {
    bench,
    client: 'node',
    records,
    seconds: m.seconds.toFixed(4),
    cpu_s: m.cpu_s.toFixed(4),
    peak_rss_kb: process.resourceUsage().maxRSS,
    ...extra,
  };
  const line = Object.entries(fields).map(([k, v]) => `${k}=${v}`).join(' ');
  process.stdout.write(`RESULT ${line}\n`);
}

// Fails the process with a message; used for anything that makes the run meaningless.
function die(message) {
  process.stderr.write(`${message}\n`);
  process.exit(1);
}

// Counts outstanding operations and lets the caller wait until the count drops to a level.
class Window {
  constructor() {
    this.outstanding = 0;
    this.waiter = null;
  }
  add() {
    this.outstanding++;
  }
  done() {
    this.outstanding--;
    if (this.waiter && this.outstanding <= this.waiter.level) {
      const {resolve} = this.waiter;
      this.waiter = null;
      resolve();
    }
  }
  // Resolves once at most `level` operations are outstanding.
  async drainTo(level) {
    if (this.outstanding <= level) return;
    await new Promise(resolve => {
      this.waiter = {level, resolve};
    });
  }
}

module.exports = {parseArgs, requireEnv, measure, printResult, die, Window};
