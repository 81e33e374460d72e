#!/usr/bin/env python3
"""Runs gcpstream's benchmark clients against their peers, interleaved, and prints medians.

Called by scripts/bench.sh once the bench targets are built, the emulators are up (their
*_EMULATOR_HOST variables exported) and the Node peers are installed. Standard library only.

For each workload (Pub/Sub publish, Pub/Sub pull, Bigtable write) there are three clients:

  gcpstream  the connector in a job (build/bench/<workload> --only sink|source)
  raw        a plain gRPC loop over the same generated stubs (build/bench/<workload> --only raw)
  node       Google's Node.js client library (bench/peers/<workload>.js)

Each run is its own process. Rounds go A B C, A B C, ...: the first round is a warm-up (it also
warms the emulator) and is discarded; the next --repetitions rounds are kept. Every process does
its own in-process warm-up of W records before its measured N records and prints one line

  RESULT bench=<workload> client=<client> records=<N> seconds=<wall> cpu_s=<cpu> peak_rss_kb=<kb>

where seconds and cpu_s (user+system of that process, getrusage) cover the N measured records
only. This script also takes the whole process's rusage from wait4(): peak RSS comes from there
for every client alike, and "process CPU" (start-up, setup and warm-up included) is shown beside
the windowed figure.

Binaries that do not print a RESULT line yet are read from their older `--only` summary
("raw: 36073 messages/s, 0.329 CPU-s per 100k"); see docs/performance.md.
"""

import argparse
import datetime
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time

SPREAD_LIMIT = 0.10  # a median whose spread exceeds this makes its ratios inconclusive
GOAL_CPU_VS_PEER = 1 / 3  # gcpstream CPU per record <= 1/3 of the Node peer's
GOAL_RATE_VS_RAW = 0.85  # gcpstream throughput >= 85 % of the raw loop

# Records per measured run and per in-process warm-up, and repetitions, per mode.
MODES = {
    "quick": {
        "repetitions": 3,
        "pubsub_publish": (200_000, 40_000),
        "pubsub_pull": (8_000, 1_000),
        "bigtable_write": (100_000, 20_000),
        "spanner_write": (100_000, 20_000),
    },
    "full": {
        "repetitions": 5,
        "pubsub_publish": (500_000, 100_000),
        "pubsub_pull": (30_000, 5_000),
        "bigtable_write": (300_000, 50_000),
        "spanner_write": (200_000, 50_000),
    },
}

UNITS = {"pubsub_publish": "msgs", "pubsub_pull": "msgs", "bigtable_write": "rows",
         "spanner_write": "rows"}
COUNT_FLAG = {"pubsub_publish": "--messages", "pubsub_pull": "--messages",
              "bigtable_write": "--rows", "spanner_write": "--rows"}
CONNECTOR_SIDE = {"pubsub_publish": "sink", "pubsub_pull": "source", "bigtable_write": "sink",
                  "spanner_write": "sink"}
CLIENTS = ("gcpstream", "raw", "node")
PULL_TOPIC = "bench-pull"
PULL_WARMUP_TOPIC = "bench-pull-warmup"  # the warm-up's subscriptions: never the measured one

RESULT_RE = re.compile(r"^RESULT\s+(.*)$")
LEGACY_RE = re.compile(
    r"^(sink|source|raw): ([0-9.]+) [a-z]+/s, ([0-9.]+) CPU-s per 100k", re.MULTILINE)


def log(msg):
    print(f"[bench] {msg}", file=sys.stderr, flush=True)


class RunError(Exception):
    pass


def run_process(argv, env, timeout_s):
    """Runs argv to completion; returns (stdout, stderr, rusage). Kills its group on timeout."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(argv, stdout=out, stderr=err, stdin=subprocess.DEVNULL, env=env,
                                start_new_session=True)
        deadline = time.monotonic() + timeout_s
        while True:
            pid, status, rusage = os.wait4(proc.pid, os.WNOHANG)
            if pid == proc.pid:
                break
            if time.monotonic() > deadline:
                os.killpg(proc.pid, signal.SIGKILL)
                os.wait4(proc.pid, 0)
                raise RunError(f"timed out after {timeout_s} s: {' '.join(argv)}")
            time.sleep(0.02)
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout = out.read().decode(errors="replace")
        stderr = err.read().decode(errors="replace")
        if proc.returncode != 0:
            tail = "\n".join((stdout + stderr).strip().splitlines()[-15:])
            raise RunError(f"exit {proc.returncode}: {' '.join(argv)}\n{tail}")
        return stdout, stderr, rusage


def parse_result(stdout, records):
    """The RESULT line's fields, or the same fields derived from an older --only summary."""
    for line in stdout.splitlines():
        m = RESULT_RE.match(line.strip())
        if m:
            fields = dict(kv.split("=", 1) for kv in m.group(1).split() if "=" in kv)
            return {
                "records": int(fields["records"]),
                "seconds": float(fields["seconds"]),
                "cpu_s": float(fields["cpu_s"]),
                "reported_peak_rss_kb": int(float(fields.get("peak_rss_kb", 0))),
                "format": "result",
            }
    m = LEGACY_RE.search(stdout)
    if m:
        rate, cpu_per_100k = float(m.group(2)), float(m.group(3))
        return {
            "records": records,
            "seconds": records / rate,
            "cpu_s": cpu_per_100k * records / 100_000,
            "reported_peak_rss_kb": 0,
            "format": "legacy",
        }
    raise RunError("no RESULT line (nor an older '--only' summary) in the output:\n"
                   + stdout[-2000:])


class Client:
    """One way of running a workload: the argv builder and what the binary understands."""

    def __init__(self, workload, name, argv_prefix, flags):
        self.workload = workload
        self.name = name
        self.argv_prefix = argv_prefix
        self.flags = flags  # option names the program accepts (None: all of ours)

    def accepts(self, flag):
        return self.flags is None or flag in self.flags

    def argv(self, records, warmup, subscription, warmup_subscription, streams):
        argv = list(self.argv_prefix) + [COUNT_FLAG[self.workload], str(records)]
        if self.accepts("--warmup"):
            argv += ["--warmup", str(warmup)]
        if subscription is not None and self.accepts("--subscription"):
            argv += ["--subscription", subscription]
        if warmup_subscription is not None and self.accepts("--warmup-subscription"):
            argv += ["--warmup-subscription", warmup_subscription]
        if self.workload == "pubsub_pull" and self.accepts("--streams"):
            argv += ["--streams", str(streams)]
        return argv


def help_flags(binary):
    """The --long options a C++ benchmark lists in its --help (CLI11)."""
    try:
        out = subprocess.run([binary, "--help"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return set()
    return set(re.findall(r"(--[a-z][a-z0-9-]*)", out.stdout + out.stderr))


def make_clients(workload, build_dir, peers_dir, node):
    clients = []
    binary = os.path.join(build_dir, "bench", workload)
    if os.access(binary, os.X_OK):
        flags = help_flags(binary)
        for name, side in (("gcpstream", CONNECTOR_SIDE[workload]), ("raw", "raw")):
            clients.append(Client(workload, name, [binary, "--only", side], flags))
        missing = [f for f in ("--warmup",) if f not in flags]
        if workload == "pubsub_pull":
            missing += [f for f in ("--subscription", "--warmup-subscription")
                        if f not in flags]
        if missing:
            log(f"{workload}: {binary} has no {' '.join(missing)} option; "
                "running it without (see docs/performance.md for what it should accept)")
    else:
        log(f"{workload}: {binary} is missing: skipping the gcpstream and raw clients")
    script = os.path.join(peers_dir, f"{workload}.js")
    clients.append(Client(workload, "node", [node, script], None))
    return clients


class Runner:
    def __init__(self, args):
        self.args = args
        self.env = dict(os.environ)
        self.peers_dir = args.peers_dir
        self.sequence = 0

    def admin(self, *argv):
        run_process([self.args.node, os.path.join(self.peers_dir, "pubsub_admin.js"), *argv],
                    self.env, self.args.timeout)

    def run_once(self, client, records, warmup):
        subscription = warmup_subscription = None
        seeded = []
        try:
            if client.workload == "pubsub_pull":
                # The measured records and the warm-up's come from different subscriptions (and
                # topics): a closing warm-up stream leaves the messages it had outstanding held
                # by the emulator for about a minute, which would stall a measured run reading
                # the same subscription.
                self.sequence += 1
                subscription = f"bench-pull-{os.getpid()}-{self.sequence}"
                self.admin("seed", "--topic", PULL_TOPIC, "--subscription", subscription,
                           "--messages", str(records))
                seeded.append(subscription)
                if warmup > 0 and client.accepts("--warmup-subscription"):
                    warmup_subscription = subscription + "-warmup"
                    self.admin("seed", "--topic", PULL_WARMUP_TOPIC, "--subscription",
                               warmup_subscription, "--messages", str(warmup))
                    seeded.append(warmup_subscription)
            argv = client.argv(records, warmup, subscription, warmup_subscription,
                               self.args.pull_streams)
            stdout, _, rusage = run_process(argv, self.env, self.args.timeout)
        finally:
            for name in seeded:
                self.admin("delete", "--subscription", name)
        result = parse_result(stdout, records)
        result.update({
            "process_cpu_s": rusage.ru_utime + rusage.ru_stime,
            "peak_rss_kb": rusage.ru_maxrss,  # KiB on Linux
            "argv": argv,
        })
        result["rate"] = result["records"] / result["seconds"]
        result["cpu_per_100k"] = result["cpu_s"] * 100_000 / result["records"]
        return result


def median(values):
    return statistics.median(values) if values else float("nan")


def spread(values):
    """(max - min) / median, as bench/bench_util.h reports it."""
    if not values:
        return float("nan")
    med = median(values)
    return (max(values) - min(values)) / med if med else 0.0


def summarize(runs):
    out = {}
    for key in ("rate", "cpu_per_100k", "peak_rss_kb", "process_cpu_s"):
        values = [r[key] for r in runs]
        out[key] = (median(values), spread(values))
    out["n"] = len(runs)
    out["format"] = runs[0]["format"] if runs else ""
    return out


def ratio(a, b):
    """Ratio of two (median, spread) pairs, and whether it is conclusive."""
    if a is None or b is None or not b[0]:
        return None
    return a[0] / b[0], max(a[1], b[1]) <= SPREAD_LIMIT


def fmt_ratio(r, goal=None, higher_is_better=True):
    if r is None:
        return "n/a"
    value, conclusive = r
    text = f"{value:.2f}"
    if goal is not None:
        met = value >= goal if higher_is_better else value <= goal
        text += " met" if met else " MISSED"
    if not conclusive:
        text += " (inconclusive)"
    return text


def report(summaries, modes, args, started):
    lines = []
    lines.append(f"gcpstream benchmarks vs peers: {args.mode} run, {args.repetitions} interleaved "
                 f"repetitions after a warm-up round; medians, spread = (max-min)/median")
    lines.append("")
    header = (f"{'workload':<15} {'client':<10} {'records/s':>10} {'spread':>7} "
              f"{'CPU-s/100k':>10} {'spread':>7} {'peak RSS MiB':>12} {'proc CPU-s':>10}")
    lines.append(header)
    lines.append("-" * len(header))
    for workload, per_client in summaries.items():
        records, warmup = modes[workload]
        for name in CLIENTS:
            s = per_client.get(name)
            if s is None:
                lines.append(f"{workload:<15} {name:<10} {'not run':>10}")
                continue
            flag = lambda sp: "!" if sp > SPREAD_LIMIT else " "
            lines.append(
                f"{workload:<15} {name:<10} {s['rate'][0]:>10.0f} {100 * s['rate'][1]:>5.0f}%"
                f"{flag(s['rate'][1])} {s['cpu_per_100k'][0]:>10.3f} "
                f"{100 * s['cpu_per_100k'][1]:>5.0f}%{flag(s['cpu_per_100k'][1])} "
                f"{s['peak_rss_kb'][0] / 1024:>12.1f} {s['process_cpu_s'][0]:>10.2f}"
                + ("  (legacy output)" if s["format"] == "legacy" else ""))
    lines.append("")
    lines.append("ratios (medians; 'inconclusive' when either side's spread > 10 %):")
    rheader = (f"{'workload':<15} {'CPU/rec gcp/node':>22} {'CPU/rec gcp/raw':>20} "
               f"{'rate gcp/raw':>20} {'rate gcp/node':>20} {'RSS gcp/node':>13}")
    lines.append(rheader)
    lines.append("-" * len(rheader))
    for workload, per_client in summaries.items():
        g, r, n = (per_client.get(c) for c in CLIENTS)
        get = lambda s, k: s[k] if s else None
        cpu_node = ratio(get(g, "cpu_per_100k"), get(n, "cpu_per_100k"))
        cpu_raw = ratio(get(g, "cpu_per_100k"), get(r, "cpu_per_100k"))
        rate_raw = ratio(get(g, "rate"), get(r, "rate"))
        rate_node = ratio(get(g, "rate"), get(n, "rate"))
        rss = ratio(get(g, "peak_rss_kb"), get(n, "peak_rss_kb"))
        rate_raw_text = fmt_ratio(rate_raw, GOAL_RATE_VS_RAW)
        if workload == "pubsub_pull" and rate_raw is not None:
            rate_raw_text += " *"
        lines.append(
            f"{workload:<15} {fmt_ratio(cpu_node, GOAL_CPU_VS_PEER, False):>22} "
            f"{fmt_ratio(cpu_raw):>20} {rate_raw_text:>20} {fmt_ratio(rate_node):>20} "
            f"{fmt_ratio(rss):>13}")
    lines.append("")
    lines.append(f"goals: CPU per record gcpstream/node <= {GOAL_CPU_VS_PEER:.2f}; "
                 f"throughput gcpstream/raw >= {GOAL_RATE_VS_RAW:.2f}.")
    lines.append("* pull throughput is bounded by the emulator (about 1.9k msg/s per stream): "
                 "judge pull by CPU per record.")
    lines.append("records per run (warm-up in each process): " + ", ".join(
        f"{w} {modes[w][0]} ({modes[w][1]})" for w in summaries))
    lines.append(f"pull streams per client: {args.pull_streams}; elapsed "
                 f"{time.monotonic() - started:.0f} s")
    return "\n".join(lines)


def markdown(summaries):
    """The same medians and ratios as Markdown tables, for docs/performance.md."""
    pct = lambda sp: f"{100 * sp:.0f} %"
    rows = ["| workload | client | records/s (spread) | CPU-s per 100k (spread) | peak RSS MiB "
            "| process CPU-s |",
            "| --- | --- | ---: | ---: | ---: | ---: |"]
    for workload, per_client in summaries.items():
        for name in CLIENTS:
            s = per_client.get(name)
            if s is None:
                rows.append(f"| {workload} | {name} | not run | | | |")
                continue
            rows.append(
                f"| {workload} | {name} | {s['rate'][0]:.0f} ({pct(s['rate'][1])}) | "
                f"{s['cpu_per_100k'][0]:.3f} ({pct(s['cpu_per_100k'][1])}) | "
                f"{s['peak_rss_kb'][0] / 1024:.1f} | {s['process_cpu_s'][0]:.2f} |")
    rows += ["", "| workload | CPU/rec gcpstream/node (goal <= 0.33) | CPU/rec gcpstream/raw "
             "| rate gcpstream/raw (goal >= 0.85) | rate gcpstream/node | RSS gcpstream/node |",
             "| --- | ---: | ---: | ---: | ---: | ---: |"]
    for workload, per_client in summaries.items():
        g, r, n = (per_client.get(c) for c in CLIENTS)
        get = lambda s, k: s[k] if s else None
        cells = [
            fmt_ratio(ratio(get(g, "cpu_per_100k"), get(n, "cpu_per_100k")), GOAL_CPU_VS_PEER,
                      False),
            fmt_ratio(ratio(get(g, "cpu_per_100k"), get(r, "cpu_per_100k"))),
            fmt_ratio(ratio(get(g, "rate"), get(r, "rate")), GOAL_RATE_VS_RAW),
            fmt_ratio(ratio(get(g, "rate"), get(n, "rate"))),
            fmt_ratio(ratio(get(g, "peak_rss_kb"), get(n, "peak_rss_kb"))),
        ]
        rows.append(f"| {workload} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(here)
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--mode", choices=sorted(MODES), default="full")
    p.add_argument("--repetitions", type=int)
    p.add_argument("--workloads",
                   default="pubsub_publish,pubsub_pull,bigtable_write,spanner_write")
    p.add_argument("--build-dir", default=os.path.join(root, "build"))
    p.add_argument("--peers-dir", default=os.path.join(root, "bench", "peers"))
    p.add_argument("--node", default="node")
    p.add_argument("--pull-streams", type=int, default=1)
    p.add_argument("--timeout", type=int, default=600, help="seconds per process")
    p.add_argument("--out-dir", default=os.path.join(root, ".run", "bench"))
    p.add_argument("--scale", type=float, default=1.0,
                   help="multiply every record count (for trying the script out)")
    args = p.parse_args()
    mode = MODES[args.mode]
    args.repetitions = args.repetitions or mode["repetitions"]
    workloads = [w for w in args.workloads.split(",") if w]
    for w in workloads:
        if w not in COUNT_FLAG:
            p.error(f"unknown workload {w}")
    modes = {w: tuple(max(1, int(x * args.scale)) for x in mode[w]) for w in workloads}

    started = time.monotonic()
    runner = Runner(args)
    summaries = {}
    all_runs = []
    failures = []
    for workload in workloads:
        records, warmup = modes[workload]
        clients = make_clients(workload, args.build_dir, args.peers_dir, args.node)
        kept = {c.name: [] for c in clients}
        broken = set()
        for round_no in range(args.repetitions + 1):
            label = "warm-up" if round_no == 0 else f"rep {round_no}/{args.repetitions}"
            for client in clients:
                if client.name in broken:
                    continue
                try:
                    r = runner.run_once(client, records, warmup)
                except RunError as e:
                    log(f"{workload} {client.name}: FAILED ({label}): {e}")
                    failures.append(f"{workload}/{client.name}")
                    broken.add(client.name)
                    continue
                log(f"{workload:<15} {client.name:<10} {label:<9} {r['rate']:>9.0f} rec/s "
                    f"{r['cpu_per_100k']:>7.3f} CPU-s/100k {r['peak_rss_kb'] / 1024:>7.1f} MiB")
                r.update({"workload": workload, "client": client.name, "round": round_no})
                all_runs.append(r)
                if round_no > 0:
                    kept[client.name].append(r)
        summaries[workload] = {name: summarize(runs) for name, runs in kept.items()
                               if runs and name not in broken}

    text = report(summaries, modes, args, started)
    print(text)
    os.makedirs(args.out_dir, exist_ok=True)
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    base = os.path.join(args.out_dir, f"{stamp}-{args.mode}")
    with open(base + ".json", "w") as f:
        json.dump({"mode": args.mode, "repetitions": args.repetitions, "records": modes,
                   "runs": all_runs, "failures": failures}, f, indent=1)
    with open(base + ".txt", "w") as f:
        f.write(text + "\n\n" + markdown(summaries) + "\n")
    log(f"raw runs in {base}.json, table (and markdown) in {base}.txt")
    if failures:
        log("failed: " + ", ".join(failures))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
