#!/usr/bin/env bash
# Install Debian's prometheus package (promtool and prometheus) for the monitoring tests
# (tests/monitoring: `promtool check|test rules`, a real Prometheus scraping `uniret serve`).
# Idempotent: does nothing when both binaries are on PATH. Needs root (apt-get). .ci/run calls it
# under CI; by hand: sudo .ci/install-prometheus.sh. No recommends: the node exporter is not needed,
# and the package's service is never started by the tests (they run their own on 127.0.0.1).
set -euo pipefail

fail() {
    echo "install-prometheus.sh: $*" >&2
    exit 1
}

if command -v promtool >/dev/null && command -v prometheus >/dev/null; then
    echo "install-prometheus.sh: already installed ($(promtool --version 2>&1 | head -1))"
    exit 0
fi
command -v apt-get >/dev/null || fail "no apt-get here: install Prometheus (promtool, prometheus) with this machine's package manager"
[ "$(id -u)" -eq 0 ] || fail "installing prometheus needs root: sudo $0"

start=$(date +%s)
export DEBIAN_FRONTEND=noninteractive
apt-get update -q || fail "apt-get update failed (is a Debian mirror reachable? see /etc/apt/sources.list*)"
apt-get install -y -q --no-install-recommends prometheus || fail "apt-get install prometheus failed (see above)"
command -v promtool >/dev/null && command -v prometheus >/dev/null \
    || fail "promtool or prometheus is still not on PATH after apt-get install"
echo "install-prometheus.sh: installed in $(( $(date +%s) - start )) s ($(promtool --version 2>&1 | head -1))"
