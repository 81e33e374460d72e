#!/usr/bin/env bash
# The main job, end to end, with a crash in the middle:
#   1. file -> Pub/Sub: 20,000 real flights (examples/pipelines/flights-to-pubsub.yaml);
#   2. Pub/Sub -> Bigtable (examples/pipelines/flights-pubsub-to-bigtable.yaml), killed with
#      SIGKILL part-way and restarted with --restore (as many times as --kills says);
#   3. the table is read back and checked: exactly one correct row per input record.
#
#   scripts/demo.sh [--kills N] [--no-setup] [--seed S]
#
# Sets up and builds what is missing, starts the Pub/Sub and Bigtable emulators (and stops the
# ones it started), and exits non-zero when the verification fails. Each run uses fresh
# resource names, so runs never see each other's data.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

kills=1
setup=1
seed="${RANDOM}"
build_dir="${BUILD_DIR:-build}"
while [ $# -gt 0 ]; do
  case "$1" in
    --kills) kills="$2"; shift ;;
    --no-setup) setup=0 ;;
    --seed) seed="$2"; shift ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
  shift
done
RANDOM="$seed"

log() { printf '[demo] %s\n' "$*"; }

if [ "$setup" = 1 ]; then
  log "setup and build"
  scripts/setup.sh
  [ -f "$build_dir/CMakeCache.txt" ] || cmake -S . -B "$build_dir" >/dev/null
  cmake --build "$build_dir" -j "$(nproc)" --target gcpstream_cli verify_flights
fi
cli="$build_dir/tools/gcpstream"
verify="$build_dir/tools/verify_flights"

started=()
pids=()
cleanup() {
  local p n
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  for n in "${started[@]}"; do scripts/emulators.sh stop "$n" >/dev/null || true; done
}
trap cleanup EXIT
for n in pubsub bigtable; do
  if ! scripts/emulators.sh status "$n" >/dev/null 2>&1; then started+=("$n"); fi
done
scripts/emulators.sh start pubsub >/dev/null
scripts/emulators.sh start bigtable >/dev/null
eval "$(scripts/emulators.sh env all)"
export PUBSUB_EMULATOR_HOST BIGTABLE_EMULATOR_HOST

run_id="demo-$(date +%s)-$$"
work=".run/$run_id"
mkdir -p "$work"
export GCP_PROJECT=gcpstream-demo BIGTABLE_INSTANCE=demo
export FLIGHTS_TOPIC="flights-$run_id" FLIGHTS_SUBSCRIPTION="flights-to-bigtable-$run_id"
export FLIGHTS_TABLE="flights-$run_id" CHECKPOINT_DIR="$work/checkpoints"
export FLIGHTS_FILE="${FLIGHTS_FILE:-.deps/vega-datasets-3.2.1/data/flights-20k.json}"
table="projects/$GCP_PROJECT/instances/$BIGTABLE_INSTANCE/tables/$FLIGHTS_TABLE"
log "run $run_id (seed $seed, $kills kill(s)); logs in $work"

# Pub/Sub delivers only to subscriptions that exist when a message is published: create the
# topic and pipeline 2's subscription first (the emulator's REST face).
rest="http://$PUBSUB_EMULATOR_HOST/v1/projects/$GCP_PROJECT"
curl -sf -X PUT "$rest/topics/$FLIGHTS_TOPIC" >/dev/null
curl -sf -X PUT -H 'Content-Type: application/json' \
  -d "{\"topic\":\"projects/$GCP_PROJECT/topics/$FLIGHTS_TOPIC\",\"ackDeadlineSeconds\":10}" \
  "$rest/subscriptions/$FLIGHTS_SUBSCRIPTION" >/dev/null

log "pipeline 1: file -> Pub/Sub"
start=$(date +%s.%N)
"$cli" run examples/pipelines/flights-to-pubsub.yaml >"$work/pipeline1.log" 2>&1 ||
  { cat "$work/pipeline1.log"; log "pipeline 1 failed"; exit 1; }
p1=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN{printf "%.1f", e-s}')
grep -E 'records|throughput' "$work/pipeline1.log" | tail -n 3 | sed 's/^/[pipeline 1] /' || true
log "pipeline 1 done in ${p1}s"

p2=examples/pipelines/flights-pubsub-to-bigtable.yaml
# Pipeline 2 serves the live dashboard (docs/dashboard.md) on this port; a busy port falls back
# to a free one, named in the run's log.
ui_port="${GCPSTREAM_UI_PORT:-8081}"
if (exec 3<>"/dev/tcp/127.0.0.1/$ui_port") 2>/dev/null; then
  log "port $ui_port is taken: the dashboard uses a free port (see 'dashboard at' in the logs)"
  ui_port=0
else
  log "dashboard: http://127.0.0.1:$ui_port/ while pipeline 2 runs"
fi
start2=$(date +%s.%N)
restore=()
for ((k = 1; k <= kills; k++)); do
  delay=$((2 + RANDOM % 5))
  log "pipeline 2, run $k: killing it with SIGKILL after ${delay}s"
  "$cli" run "$p2" "${restore[@]}" --ui-port "$ui_port" >"$work/pipeline2-run$k.log" 2>&1 &
  pid=$!
  pids+=("$pid")
  sleep "$delay"
  if kill -9 "$pid" 2>/dev/null; then
    wait "$pid" 2>/dev/null || true
  else
    log "run $k ended before the kill:"; tail -n 5 "$work/pipeline2-run$k.log"
  fi
  rows=$("$verify" --file "$FLIGHTS_FILE" --endpoint "$BIGTABLE_EMULATOR_HOST" --table "$table" 2>/dev/null |
    sed -n 's/.*, \([0-9]*\) rows in the table.*/\1/p' || true)
  log "after the kill: ${rows:-0} rows written, last checkpoint: $(find "$CHECKPOINT_DIR" -maxdepth 3 -name 'chk-*' 2>/dev/null | sort -V | tail -n 1 | sed 's|.*/||')"
  restore=(--restore)
done

log "pipeline 2, final run: --restore, until the table is complete"
"$cli" run "$p2" --restore --ui-port "$ui_port" >"$work/pipeline2-final.log" 2>&1 &
pid=$!
pids+=("$pid")
# Messages a killed reader held come back when their lease lapses (the emulator holds them for
# about a minute), so allow a few minutes.
deadline=$(($(date +%s) + 240))
until "$verify" --file "$FLIGHTS_FILE" --endpoint "$BIGTABLE_EMULATOR_HOST" --table "$table" \
  >"$work/verify.log" 2>&1; do
  if ! kill -0 "$pid" 2>/dev/null; then
    log "pipeline 2 exited early:"; tail -n 20 "$work/pipeline2-final.log"; break
  fi
  if [ "$(date +%s)" -ge "$deadline" ]; then log "the table did not complete in time"; break; fi
  sleep 3
done
# Stop with a savepoint (SIGTERM), so its acknowledgements go out, then verify once more.
kill -TERM "$pid" 2>/dev/null || true
wait "$pid" 2>/dev/null || true
p2s=$(awk -v s="$start2" -v e="$(date +%s.%N)" 'BEGIN{printf "%.1f", e-s}')
tail -n 8 "$work/pipeline2-final.log" | sed 's/^/[pipeline 2] /'
log "pipeline 2 done in ${p2s}s across $((kills + 1)) runs"
if "$verify" --file "$FLIGHTS_FILE" --endpoint "$BIGTABLE_EMULATOR_HOST" --table "$table"; then
  log "PASS"
else
  log "FAIL (logs in $work)"
  exit 1
fi
