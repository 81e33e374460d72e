#!/usr/bin/env bash
# Starts, stops and reports the Google Cloud emulators gcpstream's tests and demo use.
#
#   scripts/emulators.sh start  [bigtable|pubsub|spanner|all]   (default: all)
#   scripts/emulators.sh stop   [bigtable|pubsub|spanner|all]
#   scripts/emulators.sh status [bigtable|pubsub|spanner|all]
#   scripts/emulators.sh env    [bigtable|pubsub|spanner|all]   prints export lines
#
# Ports (loopback only) can be overridden with GCPSTREAM_BIGTABLE_PORT (8086),
# GCPSTREAM_PUBSUB_PORT (8085), GCPSTREAM_SPANNER_PORT (9010) and GCPSTREAM_SPANNER_HTTP_PORT
# (9020). Logs and pid files live in .run/emulators/. `start` waits until each emulator answers
# a real gRPC call, and is a no-op for one that is already running. `stop` stops only what this
# script started, by process group.
#
# The Spanner emulator ends each change-stream partition after GCPSTREAM_SPANNER_TOKEN_SECONDS
# to twice that (default 5; the emulator's own default is 20-40 s), so change-stream tests see
# partitions split and merge within seconds.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
run_dir="${GCPSTREAM_RUN_DIR:-$root/.run/emulators}"
host=127.0.0.1
bigtable_port="${GCPSTREAM_BIGTABLE_PORT:-8086}"
pubsub_port="${GCPSTREAM_PUBSUB_PORT:-8085}"
spanner_port="${GCPSTREAM_SPANNER_PORT:-9010}"
spanner_http_port="${GCPSTREAM_SPANNER_HTTP_PORT:-9020}"
spanner_token_seconds="${GCPSTREAM_SPANNER_TOKEN_SECONDS:-5}"
ready_timeout_s="${GCPSTREAM_EMULATOR_READY_TIMEOUT:-60}"

log() { printf '[emulators] %s\n' "$*" >&2; }
die() { printf '[emulators] error: %s\n' "$*" >&2; exit 1; }

sdk_root() {
  local gcloud_bin
  if [ -n "${GCLOUD_SDK_ROOT:-}" ]; then echo "$GCLOUD_SDK_ROOT"; return; fi
  for candidate in /usr/lib/google-cloud-sdk /usr/share/google-cloud-sdk /opt/google-cloud-sdk; do
    [ -d "$candidate/platform" ] && { echo "$candidate"; return; }
  done
  gcloud_bin="$(command -v gcloud || true)"
  [ -n "$gcloud_bin" ] || die "gcloud SDK not found; run scripts/setup.sh"
  gcloud info --format='value(installation.sdk_root)'
}

port_of() {
  case "$1" in
    bigtable) echo "$bigtable_port" ;;
    pubsub) echo "$pubsub_port" ;;
    spanner) echo "$spanner_port" ;;
  esac
}

variable_of() {
  case "$1" in
    bigtable) echo BIGTABLE_EMULATOR_HOST ;;
    pubsub) echo PUBSUB_EMULATOR_HOST ;;
    spanner) echo SPANNER_EMULATOR_HOST ;;
  esac
}

pid_file() { echo "$run_dir/$1.pid"; }

# True when the process group this script started for $1 is alive.
running() {
  local f pid
  f="$(pid_file "$1")"
  [ -f "$f" ] || return 1
  pid="$(cat "$f")"
  [ -n "$pid" ] && kill -0 -- "-$pid" 2>/dev/null
}

# Sends one unary gRPC call with a single string field 1 (a parent/project name) over HTTP/2
# cleartext and succeeds when the server answers grpc-status 0. This is a real RPC, not a port
# check: the JVM emulator accepts connections well before it can serve.
grpc_call_ok() {
  local target="$1" method="$2" field="$3" body len
  len=${#field}
  body="$(mktemp)"
  # gRPC frame: 1 byte "not compressed", 4 bytes big-endian length, then the message
  # (tag 0x0a = field 1, length-delimited; our values are < 128 bytes).
  printf "\\x00\\x00\\x00\\x00\\x$(printf %02x $((len + 2)))\\x0a\\x$(printf %02x "$len")%s" \
    "$field" >"$body"
  local headers
  headers="$(curl -s --max-time 5 --http2-prior-knowledge -X POST \
    -H 'content-type: application/grpc' -H 'te: trailers' --data-binary @"$body" \
    -D - -o /dev/null "http://$target/$method" 2>/dev/null || true)"
  rm -f "$body"
  grep -qi '^grpc-status: 0' <<<"$headers"
}

probe() {
  case "$1" in
    bigtable)
      grpc_call_ok "$host:$bigtable_port" google.bigtable.admin.v2.BigtableTableAdmin/ListTables \
        "projects/probe/instances/probe" ;;
    pubsub)
      grpc_call_ok "$host:$pubsub_port" google.pubsub.v1.Publisher/ListTopics "projects/probe" ;;
    spanner)
      grpc_call_ok "$host:$spanner_port" \
        google.spanner.admin.instance.v1.InstanceAdmin/ListInstanceConfigs "projects/probe" ;;
  esac
}

launch() {
  local name="$1" sdk
  sdk="$(sdk_root)"
  local logf="$run_dir/$name.log"
  case "$name" in
    bigtable)
      local bin="$sdk/platform/bigtable-emulator/cbtemulator"
      [ -x "$bin" ] || die "Bigtable emulator not found at $bin; run scripts/setup.sh"
      setsid "$bin" -host "$host" -port "$bigtable_port" >"$logf" 2>&1 </dev/null &
      ;;
    pubsub)
      local bin="$sdk/platform/pubsub-emulator/bin/cloud-pubsub-emulator"
      [ -x "$bin" ] || die "Pub/Sub emulator not found at $bin; run scripts/setup.sh"
      command -v java >/dev/null || die "the Pub/Sub emulator needs Java; run scripts/setup.sh"
      setsid "$bin" --host="$host" --port="$pubsub_port" >"$logf" 2>&1 </dev/null &
      ;;
    spanner)
      local dir="$sdk/bin/cloud_spanner_emulator"
      [ -x "$dir/gateway_main" ] || die "Spanner emulator not found in $dir; run scripts/setup.sh"
      setsid "$dir/gateway_main" --hostname "$host" --grpc_port "$spanner_port" \
        --http_port "$spanner_http_port" --grpc_binary "$dir/emulator_main" \
        --override_change_stream_partition_token_alive_seconds "$spanner_token_seconds" \
        >"$logf" 2>&1 </dev/null &
      ;;
  esac
  # setsid makes the child a process-group leader, so its pid is the group id.
  echo $! >"$(pid_file "$name")"
}

start_one() {
  local name="$1"
  if running "$name"; then
    if probe "$name"; then
      log "$name already running on $host:$(port_of "$name")"
      return
    fi
  elif probe "$name"; then
    die "something else already answers on $host:$(port_of "$name") (not started by this script); stop it or set GCPSTREAM_${name^^}_PORT"
  fi
  mkdir -p "$run_dir"
  launch "$name"
  local deadline=$((SECONDS + ready_timeout_s))
  until probe "$name"; do
    if ! running "$name"; then
      tail -n 20 "$run_dir/$name.log" >&2 || true
      die "$name emulator exited during startup (log: $run_dir/$name.log)"
    fi
    if [ "$SECONDS" -ge "$deadline" ]; then
      tail -n 20 "$run_dir/$name.log" >&2 || true
      die "$name emulator did not answer within ${ready_timeout_s}s (log: $run_dir/$name.log)"
    fi
    sleep 0.2
  done
  log "$name ready on $host:$(port_of "$name")"
}

stop_one() {
  local name="$1" f pid
  f="$(pid_file "$name")"
  if ! running "$name"; then
    rm -f "$f"
    log "$name not running (nothing of ours to stop)"
    return
  fi
  pid="$(cat "$f")"
  kill -TERM -- "-$pid" 2>/dev/null || true
  for _ in $(seq 1 50); do
    kill -0 -- "-$pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -KILL -- "-$pid" 2>/dev/null || true
  rm -f "$f"
  log "$name stopped"
}

status_one() {
  local name="$1" state
  if running "$name"; then
    if probe "$name"; then state="healthy"; else state="running, not answering"; fi
    printf '%-9s %-22s pid %s  %s:%s\n' "$name" "$state" "$(cat "$(pid_file "$name")")" \
      "$host" "$(port_of "$name")"
    [ "$state" = healthy ]
  else
    printf '%-9s %-22s\n' "$name" "stopped"
    return 1
  fi
}

env_one() {
  printf 'export %s=%s:%s\n' "$(variable_of "$1")" "$host" "$(port_of "$1")"
}

main() {
  local cmd="${1:-}" which="${2:-all}" names
  case "$which" in
    all) names=(bigtable pubsub spanner) ;;
    bigtable|pubsub|spanner) names=("$which") ;;
    *) die "unknown emulator '$which' (bigtable, pubsub, spanner or all)" ;;
  esac
  local rc=0 n
  case "$cmd" in
    start) for n in "${names[@]}"; do start_one "$n"; done ;;
    stop) for n in "${names[@]}"; do stop_one "$n"; done ;;
    status) for n in "${names[@]}"; do status_one "$n" || rc=1; done ;;
    env) for n in "${names[@]}"; do env_one "$n"; done ;;
    *) sed -n '2,14p' "$0"; exit 2 ;;
  esac
  return "$rc"
}

main "$@"
