#!/usr/bin/env bash
# Build the sandbox image named in conf/sandbox/docker.yaml from sandbox-image/Dockerfile.
#
# Fast path: if the image exists and carries the content label (a hash of every build input),
# nothing is done. When the base image is neither local nor pullable (no registry reachable),
# a Debian bookworm rootfs is made with debootstrap from the machine's own apt mirror and
# imported under the base tag, so the build itself needs no registry and no network.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CONF="$ROOT/conf/sandbox/docker.yaml"
CONTEXT="$ROOT/sandbox-image"
SUITE=bookworm
LABEL_KEY=ctxbench.image.content

say() { echo "build_image: $*" >&2; }

# The YAML is the single source of truth; a flat `key: value` read is enough for it.
conf_get() {
  sed -n -E "s/^$1:[[:space:]]*[\"']?([^\"'#[:space:]]+)[\"']?.*$/\1/p" "$CONF" | head -n 1
}
IMAGE="$(conf_get image)"
BASE="$(conf_get base_image)"
if [ -z "$IMAGE" ] || [ -z "$BASE" ]; then
  say "could not read 'image' and 'base_image' from $CONF"
  exit 1
fi

if ! docker info >/dev/null 2>&1; then
  say "no reachable Docker engine; run scripts/ensure_docker.sh first"
  exit 1
fi

# Content hash: the build context (Dockerfile and anything beside it) plus the base tag.
HASH="$( { echo "base=$BASE"; cd "$CONTEXT" && find . -type f -print0 | LC_ALL=C sort -z \
          | xargs -0 sha256sum; } | sha256sum | cut -c1-16)"
have="$(docker image inspect -f "{{ index .Config.Labels \"$LABEL_KEY\" }}" "$IMAGE" 2>/dev/null || true)"
if [ "$have" = "$HASH" ]; then
  say "$IMAGE is up to date ($LABEL_KEY=$HASH)"
  exit 0
fi

debian_mirror() {
  # The first non-security Debian URI apt is configured with: on locked-down machines it is
  # the only mirror that is reachable. Handles one-line and deb822 (.sources) formats.
  local uri
  uri="$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null \
          | sed -n -E 's/^deb[[:space:]]+(\[[^]]*\][[:space:]]+)?([^[:space:]]+)[[:space:]].*/\2/p' \
          | grep -v security | head -n 1 || true)"
  if [ -z "$uri" ]; then
    uri="$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null \
            | sed -n -E 's/^URIs:[[:space:]]*([^[:space:]]+).*/\1/p' | grep -v security | head -n 1 || true)"
  fi
  echo "${CTXBENCH_DEBIAN_MIRROR:-${uri:-http://deb.debian.org/debian}}"
}

bootstrap_base() {
  if [ "$(id -u)" -ne 0 ]; then
    say "base image $BASE is missing and cannot be pulled; bootstrapping it needs root."
    say "Run this script as root, or 'docker pull $BASE' on a machine with registry access."
    exit 1
  fi
  if ! command -v debootstrap >/dev/null 2>&1; then
    say "installing debootstrap"
    export DEBIAN_FRONTEND=noninteractive
    apt-cache policy debootstrap 2>/dev/null | grep -q 'Candidate: [0-9]' || apt-get update -qq
    apt-get install -y -qq --no-install-recommends debootstrap debian-archive-keyring
  fi
  local mirror dir
  mirror="$(debian_mirror)"
  dir="$(mktemp -d /var/tmp/ctxbench-rootfs.XXXXXX)"
  # shellcheck disable=SC2064
  trap "rm -rf '$dir'" EXIT
  say "debootstrapping $SUITE from $mirror into $dir (about a minute)"
  debootstrap --variant=minbase --include=python3,python3-pytest,git "$SUITE" "$dir" "$mirror" \
    >"$dir.log" 2>&1 || { tail -n 30 "$dir.log" >&2; rm -f "$dir.log"; exit 1; }
  rm -f "$dir.log"
  rm -rf "$dir"/var/cache/apt/archives/*.deb "$dir"/var/lib/apt/lists/* "$dir"/tmp/*
  say "importing the rootfs as $BASE"
  tar --numeric-owner -C "$dir" -c . \
    | docker import --change 'CMD ["/bin/bash"]' --change "LABEL ctxbench.base.bootstrapped=$SUITE" - "$BASE" >/dev/null
  rm -rf "$dir"
  trap - EXIT
}

if ! docker image inspect "$BASE" >/dev/null 2>&1; then
  say "base image $BASE not present locally; trying to pull it"
  if ! timeout 120 docker pull -q "$BASE" >/dev/null 2>&1; then
    say "pull failed (no registry reachable?)"
    bootstrap_base
  fi
fi

say "building $IMAGE from $BASE"
# DOCKER_BUILDKIT=0: the classic builder resolves FROM against local images only, whereas
# BuildKit (where available) may try the registry for a tag that exists only locally.
DOCKER_BUILDKIT=0 docker build -q \
  --build-arg "BASE_IMAGE=$BASE" \
  --label "$LABEL_KEY=$HASH" \
  -t "$IMAGE" "$CONTEXT" >/dev/null
say "built $IMAGE ($LABEL_KEY=$HASH)"
