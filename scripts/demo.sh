#!/usr/bin/env bash
# The first thing a new user runs. Until the main job (file -> Pub/Sub -> Bigtable with a crash
# and restore) exists, this is a placeholder that sets up, builds, starts the emulators and runs
# the emulator smoke tests, so a user sees the whole toolchain working.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
echo "[demo] placeholder: the main job is not built yet; running the emulator smoke tests"
exec scripts/test.sh -L integration -R Smoke
