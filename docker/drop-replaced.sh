#!/usr/bin/env bash
# `docker/drop-replaced.sh OLD_ID TAG`: after a build moved TAG off image OLD_ID, remove OLD_ID, so
# rebuilds do not pile up a 3.5 GB image each on the machine (CI's disk is shared: docs/ci.md,
# "Disk"). It is kept when TAG still names it, another tag does, or a container uses it.
#   ENGINE  podman (default) or docker: docker/build.sh passes the one it built with
set -euo pipefail
old=${1:?usage: docker/drop-replaced.sh OLD_ID TAG}
tag=${2:?usage: docker/drop-replaced.sh OLD_ID TAG}
ENGINE=${ENGINE:-podman}
new=$("$ENGINE" image inspect --format '{{.Id}}' "$tag")
if [ "$new" = "$old" ]; then
    exit 0
fi
short=${old#sha256:}  # docker prefixes its ids, podman does not
short=${short:0:12}
# `rmi` without --force refuses an image that a container uses or another tag names
if err=$("$ENGINE" rmi "$old" 2>&1 >/dev/null); then
    echo "drop-replaced.sh: removed $short, the image $tag named before this build"
else
    echo "drop-replaced.sh: kept $short, the image $tag named before this build: ${err##*Error: }"
fi
