#!/usr/bin/env bash
# Prepares a Debian 12 machine for building and testing gcpstream. Safe to run repeatedly:
# it installs only what is missing and re-fetches a pinned npm package only when its
# verified copy is absent.
#
#   scripts/setup.sh            Debian packages + pinned npm packages
#   scripts/setup.sh --deps     pinned npm packages only (no apt)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
deps_dir="${GCPSTREAM_DEPS_DIR:-$root/.deps}"

log() { printf '[setup] %s\n' "$*"; }
die() { printf '[setup] error: %s\n' "$*" >&2; exit 1; }

# Build toolchain and libraries. Every library comes from Debian's archive.
debian_packages=(
  build-essential cmake ccache pkg-config git curl ca-certificates xz-utils
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler libabsl-dev
  nlohmann-json3-dev libspdlog-dev libfmt-dev libcli11-dev libre2-dev libyaml-cpp-dev
  libgtest-dev libgmock-dev libbenchmark-dev libcpp-httplib-dev libssl-dev zlib1g-dev
  libavro-dev libzstd-dev
  openjdk-17-jre-headless nodejs npm
  chromium
)
# The gcloud emulators. They ship in Google's own apt repository, which must already be
# configured on the machine for these to install; the script says so if it is not.
emulator_packages=(
  google-cloud-cli-bigtable-emulator google-cloud-cli-pubsub-emulator
  google-cloud-cli-spanner-emulator
)

# Pinned npm packages: name, version, sha512 integrity (as the registry publishes it), and
# the files we keep from the tarball (space-separated paths).
npm_pins=(
  "google-proto-files|6.0.1|sha512-fbvUWVNh3rKGlVFWwlUNF7Sk1Tah0a89q02rLTXsWjbKKHGeuURAa8tl9rvu5TyWny1YiSIo5eDqF260Tai6vQ==|package/google"
  "vega-datasets|3.2.1|sha512-lTSwZA6yq6qSU2YZm+6bqILiIvTPPxn4itir7jPGFmHIdPvUfQ9pCzzcrklYywMJgLUbaIeSkZQdiJd6wBxPug==|package/data/flights-20k.json"
  # The dashboard's charts and job-graph drawing, vendored into build/web (no CDN at run time).
  "uplot|1.6.32|sha512-KIMVnG68zvu5XXUbC4LQEPnhwOxBuLyW1AHtpm6IKTXImkbLgkMy+jabjLgSLMasNuGGzQm/ep3tOkyTxpiQIw==|package/dist package/LICENSE"
  "cytoscape|3.35.0|sha512-sMvBIXiGMnhkCaWz2R06FwF/27MNlS+Tqvi17foO9UhnUg3XGZccKjxsvEqQFAQYMSSZmN5SxYzUYlQ0DOJJ3g==|package/dist package/LICENSE"
  "cytoscape-dagre|4.0.1|sha512-hyNdh8Vp1nwzBcjHnM4c71G81bFhPmQYLXD2HM9AZIvl+8TrMzWEOPW45hF/XOBQiEguPcDQzi6VrXR1XBcXOA==|package/dist package/LICENSE"
)

missing_debs() {
  local pkg missing=()
  for pkg in "$@"; do
    # nodejs/npm may come from elsewhere (e.g. a preinstalled Node); accept the commands.
    case "$pkg" in
      nodejs) command -v node >/dev/null 2>&1 && continue ;;
      npm) command -v npm >/dev/null 2>&1 && continue ;;
      openjdk-17-jre-headless) command -v java >/dev/null 2>&1 && continue ;;
    esac
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' \
      || missing+=("$pkg")
  done
  printf '%s\n' "${missing[@]}"
}

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

install_debian_packages() {
  mapfile -t missing < <(missing_debs "${debian_packages[@]}" | sed '/^$/d')
  if [ "${#missing[@]}" -gt 0 ]; then
    log "installing Debian packages: ${missing[*]}"
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      "${missing[@]}"
  else
    log "Debian packages: all present"
  fi
  mapfile -t missing < <(missing_debs "${emulator_packages[@]}" | sed '/^$/d')
  if [ "${#missing[@]}" -gt 0 ]; then
    log "installing emulator packages: ${missing[*]}"
    if ! as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"; then
      die "could not install ${missing[*]}: configure the Google Cloud CLI apt repository on this machine, then run this script again"
    fi
  else
    log "emulator packages: all present"
  fi
}

# Verifies a tarball against an npm "sha512-<base64>" integrity string.
verify_integrity() {
  local file="$1" integrity="$2" actual
  actual="sha512-$(openssl dgst -sha512 -binary "$file" | base64 -w0)"
  [ "$actual" = "$integrity" ]
}

fetch_npm_pin() {
  local name="$1" version="$2" integrity="$3" keep="$4"
  local dest="$deps_dir/$name-$version" stamp
  stamp="$dest/.verified"
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$integrity" ]; then
    log "$name@$version: present"
    return
  fi
  command -v npm >/dev/null 2>&1 || die "npm is required to fetch $name@$version"
  local tmp
  tmp="$(mktemp -d)"
  log "fetching $name@$version"
  (cd "$tmp" && npm pack --silent "$name@$version" >/dev/null) \
    || die "npm pack $name@$version failed"
  local tarball="$tmp/$name-$version.tgz"
  [ -f "$tarball" ] || die "npm pack did not produce $tarball"
  verify_integrity "$tarball" "$integrity" \
    || die "$name@$version: integrity mismatch, refusing to use the download"
  rm -rf "$dest"
  mkdir -p "$dest"
  local keeps
  read -r -a keeps <<<"$keep"  # one or more paths inside the tarball
  tar -xzf "$tarball" -C "$dest" --strip-components=1 "${keeps[@]}"
  printf '%s' "$integrity" > "$stamp"
  rm -rf "$tmp"
  log "$name@$version: verified and unpacked into ${dest#"$root"/}"
}

main() {
  local apt=1
  for arg in "$@"; do
    case "$arg" in
      --deps) apt=0 ;;
      -h|--help) sed -n '2,7p' "$0"; exit 0 ;;
      *) die "unknown argument: $arg" ;;
    esac
  done
  [ "$apt" -eq 1 ] && install_debian_packages
  mkdir -p "$deps_dir"
  local pin name version integrity keep
  for pin in "${npm_pins[@]}"; do
    IFS='|' read -r name version integrity keep <<<"$pin"
    fetch_npm_pin "$name" "$version" "$integrity" "$keep"
  done
  log "done"
}

main "$@"
