#!/usr/bin/env bash
# Sets up (if needed), builds, starts the emulators, and runs every test level:
# unit, integration, e2e — plus the unit tests under AddressSanitizer + UBSan with --sanitize
# (on by default when CI=true).
#
#   scripts/test.sh [--sanitize|--no-sanitize] [-L label] [-R regex]
#
# Environment: BUILD_DIR (default build), JOBS (default: number of cores), DEBUG_INFO (full or
# lines; default lines when CI=true, else full: see GCPSTREAM_DEBUG_INFO in CMakeLists.txt).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
build_dir="${BUILD_DIR:-build}"
jobs="${JOBS:-$(nproc)}"
sanitize=0
debug_info="${DEBUG_INFO:-full}"
if [ "${CI:-}" = "true" ]; then
  sanitize=1
  debug_info="${DEBUG_INFO:-lines}"
fi
ctest_filters=()
while [ $# -gt 0 ]; do
  case "$1" in
    --sanitize) sanitize=1 ;;
    --no-sanitize) sanitize=0 ;;
    -L|-R) ctest_filters+=("$1" "$2"); shift ;;
    -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
  shift
done

log() { printf '[test] %s\n' "$*"; }

started_by_us=()
cleanup() {
  local n
  for n in "${started_by_us[@]}"; do scripts/emulators.sh stop "$n" || true; done
}
trap cleanup EXIT

log "setup"
scripts/setup.sh

# A build that runs out of disk fails deep inside the linker or `ar`; say so up front instead.
# Measured sizes of a fresh build: about 4 GB with debug info `lines` and sanitizers, about
# 11 GB with `full`.
need_gb=$([ "$debug_info" = lines ] && echo 5 || echo 12)
free_kb=$(df -Pk "$(dirname "$(realpath -m "$build_dir")")" | awk 'NR==2 {print $4}')
if [ -n "$free_kb" ] && [ "$free_kb" -lt $((need_gb * 1024 * 1024)) ]; then
  log "warning: $((free_kb / 1024)) MB free where $build_dir is built; a fresh build needs about" \
    "$need_gb GB (DEBUG_INFO=lines needs less)"
fi

log "configure ($build_dir, sanitizers $([ "$sanitize" = 1 ] && echo on || echo off), debug info $debug_info)"
cmake -S . -B "$build_dir" -DGCPSTREAM_SANITIZE="$([ "$sanitize" = 1 ] && echo ON || echo OFF)" \
  -DGCPSTREAM_DEBUG_INFO="$debug_info" \
  >"$build_dir.configure.log" 2>&1 || { cat "$build_dir.configure.log"; exit 1; }
log "build (-j$jobs)"
cmake --build "$build_dir" -j "$jobs"

log "emulators"
for n in bigtable pubsub spanner; do
  if ! scripts/emulators.sh status "$n" >/dev/null 2>&1; then started_by_us+=("$n"); fi
done
scripts/emulators.sh start all
eval "$(scripts/emulators.sh env all)"
export BIGTABLE_EMULATOR_HOST PUBSUB_EMULATOR_HOST SPANNER_EMULATOR_HOST

log "ctest"
set +e
(cd "$build_dir" && ctest --output-on-failure --timeout 600 -j "$jobs" "${ctest_filters[@]}" \
  2>&1 | tee ctest.log)
rc=${PIPESTATUS[0]}
set -e
summary="$(grep -E 'tests passed|tests failed' "$build_dir/ctest.log" | tail -n 1 || true)"
log "${summary:-no CTest summary found}"
exit "$rc"
