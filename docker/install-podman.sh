#!/usr/bin/env bash
# Install what building and running the uniret images needs on a Debian-like machine: podman,
# runc (crun fails on sandboxed hosts: docker/podman/containers.conf) and debootstrap (the local
# base image, docker/base-image.sh). Idempotent: does nothing when all three are installed.
# Needs root (apt-get). .ci/run calls it under CI; by hand: sudo docker/install-podman.sh
set -euo pipefail

packages=(podman runc debootstrap)

installed() {
    [ "$(dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null)" = installed ]
}

fail() {
    echo "install-podman.sh: $*" >&2
    exit 1
}

missing=()
if command -v dpkg-query >/dev/null; then
    for pkg in "${packages[@]}"; do
        installed "$pkg" || missing+=("$pkg")
    done
else
    for pkg in "${packages[@]}"; do
        PATH=$PATH:/usr/sbin:/sbin command -v "$pkg" >/dev/null || missing+=("$pkg")
    done
fi
if [ ${#missing[@]} -eq 0 ]; then
    echo "install-podman.sh: ${packages[*]} already installed ($(podman --version))"
    exit 0
fi

command -v apt-get >/dev/null \
    || fail "no apt-get here: install ${missing[*]} with this machine's package manager"
[ "$(id -u)" -eq 0 ] || fail "installing ${missing[*]} needs root: sudo $0"

start=$(date +%s)
echo "install-podman.sh: apt-get install ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q || fail "apt-get update failed (is a Debian mirror reachable? see /etc/apt/sources.list*)"
# with recommends: podman's network and storage helpers (netavark/CNI, fuse-overlayfs, uidmap)
apt-get install -y -q "${missing[@]}" || fail "apt-get install ${missing[*]} failed (see above)"

for pkg in "${missing[@]}"; do
    installed "$pkg" || fail "$pkg is still not installed after apt-get install"
done
echo "install-podman.sh: installed ${missing[*]} in $(( $(date +%s) - start )) s ($(podman --version))"
