#!/usr/bin/env bash
# Make the base image locally when no image registry is reachable: a minimal Debian bookworm
# root file system by debootstrap, from the Debian mirror apt already uses on this machine,
# imported into podman as $BASE_TAG. Elsewhere build FROM python:3.11-slim instead
# (make image BASE_IMAGE=python:3.11-slim-bookworm) and skip this.
# Needs root, debootstrap and podman (apt-get install -y podman runc debootstrap).
set -euo pipefail

BASE_TAG=${BASE_TAG:-localhost/debian-base:bookworm}
SUITE=${SUITE:-bookworm}
ENGINE=${ENGINE:-podman}

if "$ENGINE" image exists "$BASE_TAG" 2>/dev/null; then
    echo "$BASE_TAG exists"
    exit 0
fi

# The first `URIs:` (deb822) or `deb` line of apt's Debian sources: the mirror this machine reaches.
mirror=$(grep -h -E '^URIs:' /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '{print $2}' | grep -v security | head -1 || true)
if [ -z "$mirror" ]; then
    mirror=$(grep -h -E '^deb ' /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null | awk '{print $2}' | grep -v security | head -1 || true)
fi
if [ -z "$mirror" ]; then
    echo "base-image.sh: no Debian mirror found in /etc/apt/sources.list*" >&2
    exit 1
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/uniret-rootfs.XXXXXX")
trap 'rm -rf "$work"' EXIT
echo "debootstrap $SUITE from $mirror into $work/rootfs"
debootstrap --variant=minbase "$SUITE" "$work/rootfs" "$mirror"
tar -C "$work/rootfs" -c . | "$ENGINE" import - "$BASE_TAG"
"$ENGINE" image ls "$BASE_TAG"
