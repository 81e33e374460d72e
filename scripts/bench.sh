#!/usr/bin/env bash
# Benchmarks gcpstream's connectors against a raw gRPC loop and Google's Node.js client libraries
# on the same emulators, interleaved in one run, and prints a table of medians and ratios
# (docs/performance.md explains every figure).
#
#   scripts/bench.sh [--quick] [--no-build] [--workloads w1,w2] [--repetitions R]
#
#   --quick        smaller runs and 3 repetitions (a few minutes on 2 cores); default is the
#                  full run (5 repetitions, the C++ benchmarks' default record counts)
#   --no-build     use the bench binaries already in the build folder
#   --workloads    any of pubsub_publish,pubsub_pull,bigtable_write,spanner_write (default: all)
#   --scale F      multiply every record count by F (to try the script out quickly)
#
# Environment: BUILD_DIR (default build), JOBS (default: number of cores), PULL_STREAMS
# (StreamingPull streams per pull client, default 1). Needs node/npm and python3; installs the
# pinned Node peers (bench/peers/package-lock.json) into bench/peers/node_modules with `npm ci`.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
build_dir="${BUILD_DIR:-build}"
jobs="${JOBS:-$(nproc)}"
peers_dir="$root/bench/peers"
mode=full
build=1
driver_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) mode=quick ;;
    --no-build) build=0 ;;
    --workloads|--repetitions|--scale) driver_args+=("$1" "$2"); shift ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
  shift
done

log() { printf '[bench] %s\n' "$*" >&2; }
die() { printf '[bench] error: %s\n' "$*" >&2; exit 1; }

for tool in node npm python3 cmake; do
  command -v "$tool" >/dev/null 2>&1 || die "$tool is required (scripts/setup.sh installs it)"
done

# 1. The bench binaries. pubsub_pull may not exist yet: the driver skips a missing binary.
bench_targets=(pubsub_publish bigtable_write pubsub_pull spanner_write spanner_standin)
if [ "$build" -eq 1 ]; then
  if [ ! -f "$build_dir/CMakeCache.txt" ]; then
    [ -d "$root/.deps" ] || scripts/setup.sh
    log "configure ($build_dir)"
    cmake -S . -B "$build_dir" >"$build_dir.configure.log" 2>&1 \
      || { cat "$build_dir.configure.log"; exit 1; }
  fi
  known="$(cmake --build "$build_dir" --target help 2>/dev/null || true)"
  to_build=()
  for t in "${bench_targets[@]}"; do
    if grep -qE "(^|[ .])$t(:| |$)" <<<"$known"; then
      to_build+=("$t")
    else
      log "no target $t in $build_dir: skipping it (its rows will read 'not run')"
    fi
  done
  if [ "${#to_build[@]}" -gt 0 ]; then
    log "build ${to_build[*]} (-j$jobs)"
    # The library's sources are globbed, so this builds whatever gcpstream/ holds right now.
    cmake --build "$build_dir" -j "$jobs" --target "${to_build[@]}" \
      || die "building ${to_build[*]} failed (--no-build runs the binaries already built)"
  fi
fi

# 2. The emulators; stop at exit only those this script started.
started_by_us=()
cleanup() {
  local n
  for n in "${started_by_us[@]}"; do scripts/emulators.sh stop "$n" >/dev/null 2>&1 || true; done
}
trap cleanup EXIT
for n in pubsub bigtable spanner; do
  if ! scripts/emulators.sh status "$n" >/dev/null 2>&1; then started_by_us+=("$n"); fi
  scripts/emulators.sh start "$n"
done
eval "$(scripts/emulators.sh env all)"
export BIGTABLE_EMULATOR_HOST PUBSUB_EMULATOR_HOST SPANNER_EMULATOR_HOST
# spanner_write's Node peer starts the BatchWrite stand-in itself, as the C++ benchmark does.
case "$build_dir" in
  /*) export SPANNER_STANDIN="$build_dir/tests/spanner_standin" ;;
  *) export SPANNER_STANDIN="$root/$build_dir/tests/spanner_standin" ;;
esac

# 3. The Node peers, exactly as locked; reinstalled only when the lock file changes.
lock_sum="$(sha256sum "$peers_dir/package-lock.json" | cut -d' ' -f1)"
stamp="$peers_dir/node_modules/.gcpstream-lock-sha256"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$lock_sum" ]; then
  log "installing the Node peers (npm ci)"
  # No install scripts: none of the locked packages needs one to run (protobufjs's only
  # checks versions).
  (cd "$peers_dir" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >&2)
  printf '%s' "$lock_sum" >"$stamp"
fi
log "peers: $(cd "$peers_dir" && node -p '
  const p = n => require(n + "/package.json").version;
  `@google-cloud/pubsub ${p("@google-cloud/pubsub")}, @google-cloud/bigtable ${p("@google-cloud/bigtable")}, @google-cloud/spanner ${p("@google-cloud/spanner")}, node ${process.versions.node}`')"

# 4. The interleaved runs and the table.
python3 scripts/bench_compare.py --mode "$mode" --build-dir "$build_dir" \
  --peers-dir "$peers_dir" --pull-streams "${PULL_STREAMS:-1}" "${driver_args[@]}"
