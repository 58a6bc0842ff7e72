#!/usr/bin/env bash
# Build a uniret image with the container engine found: `docker/build.sh cpu|gpu [TAG]`.
#   ENGINE      podman or docker (default: podman if installed, else docker)
#   BASE_IMAGE  "local" (default): the debootstrapped Debian base of docker/base-image.sh, for
#               machines that reach no image registry; or e.g. python:3.11-slim-bookworm
#   TAG         default: `uniret pipeline image --variant <variant>` (params.yaml, the one source)
#   CA_BUNDLE   the CA bundle pip trusts (default: pip's `cert` setting, else the system bundle);
#               passed as a build secret, so it is never stored in the image
# With podman the machine's pip configuration (`pip config list`: files and PIP_* variables)
# is bound read-only into every build step, with the local wheel folders and file:// indexes it
# names, so the build installs exactly what `make install` does on this machine.
# The image the tag named before is removed after the build (docker/drop-replaced.sh).
set -euo pipefail

variant=${1:?usage: docker/build.sh cpu|gpu [tag]}
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
case "$variant" in
    cpu) file=$here/Dockerfile ;;
    gpu) file=$here/Dockerfile.gpu ;;
    *) echo "build.sh: variant must be cpu or gpu, got $variant" >&2; exit 2 ;;
esac
UNIRET=${UNIRET:-uniret}
PIP=${PIP:-python3 -m pip}
tag=${2:-$($UNIRET pipeline image --params "$root/params.yaml" --variant "$variant")}
if [ -z "${ENGINE:-}" ]; then
    if command -v podman >/dev/null; then ENGINE=podman; else ENGINE=docker; fi
fi
if ! command -v "$ENGINE" >/dev/null; then
    echo "build.sh: $ENGINE not found: install podman (sudo docker/install-podman.sh) or docker" >&2
    exit 1
fi
if [ "$ENGINE" = podman ]; then
    export CONTAINERS_CONF=${CONTAINERS_CONF:-$here/podman/containers.conf}
fi
BASE_IMAGE=${BASE_IMAGE:-local}
if [ "$BASE_IMAGE" = local ]; then
    BASE_IMAGE=localhost/debian-base:bookworm
    BASE_TAG=$BASE_IMAGE ENGINE=$ENGINE "$here/base-image.sh"
fi

ca=${CA_BUNDLE:-${PIP_CERT:-$($PIP config get global.cert 2>/dev/null || true)}}
ca=${ca:-/etc/ssl/certs/ca-certificates.crt}
if [ ! -s "$ca" ]; then
    echo "build.sh: CA bundle $ca not found; set CA_BUNDLE" >&2
    exit 1
fi

# the label names the source the image holds; the container tests skip an image built from other
# source (keep this command equal to uniret.kubeflow.images.SOURCE_ID_CMD: a test checks it)
source_id=$(cd "$root" && find src -name '*.py' | LC_ALL=C sort | xargs cat requirements.txt requirements-dev.txt requirements.lock pyproject.toml | sha256sum | cut -c1-16)
args=(build --network host -f "$file" -t "$tag" --build-arg "BASE_IMAGE=$BASE_IMAGE"
      --secret "id=ca,src=$ca" --label "uniret.source=$source_id")
work=$(mktemp -d "${TMPDIR:-/tmp}/uniret-build.XXXXXX")
trap 'rm -rf "$work"' EXIT
if [ "$ENGINE" = podman ]; then
    args+=(--format docker)  # OCI format drops SHELL/HEALTHCHECK; docker's keeps the file's meaning
    # `pip config list` prints section.key='value' for every file and PIP_* variable in force.
    # PIP_* variables (":env:") beat the files, as they do for pip itself.
    $PIP config list | awk -F= '
        { key = $1; env = sub(/^:env:\./, "global.", key); val = substr($0, length($1) + 2)
          gsub(/^'"'"'|'"'"'$/, "", val); split(key, p, "."); sec = p[1]; name = substr(key, length(sec) + 2)
          if (name == "cert") next  # the build secret replaces it
          if (env || !((sec, name) in value)) value[sec, name] = val
          if (!(sec in seen)) { seen[sec] = 1; order[++n] = sec } }
        END { for (i = 1; i <= n; i++) { printf "[%s]\n", order[i]
                for (k in value) { split(k, q, SUBSEP); if (q[1] == order[i]) printf "%s = %s\n", q[2], value[k] } } }' > "$work/pip.conf"
    args+=(-v "$work/pip.conf:/etc/pip.conf:ro")
    # wheel folders, file:// indexes and files (e.g. a constraint file) the configuration names,
    # at the same paths; an index folder goes with its parent, where its pages' relative links
    # (../../files/...) point
    for path in $(grep -oE '(file://)?/[^ ]+' "$work/pip.conf" | sed -E 's|^file://(.*)/[^/]+/?$|\1|' | sort -u); do
        if [ -d "$path" ] || [ -f "$path" ]; then args+=(-v "$path:$path:ro"); fi
    done
    # the pinned CPU torch as a local wheel: use it rather than the PyTorch index
    if [ "$variant" = cpu ]; then
        torch=$("$root/scripts/pin.sh" torch "$root/requirements.txt")
        for path in $(grep -oE '(file://)?/[^ ]+' "$work/pip.conf" | sed 's|^file://||' | sort -u); do
            if compgen -G "$path/torch-$torch+cpu-*.whl" >/dev/null; then
                args+=(--build-arg TORCH_INDEX=)
                break
            fi
        done
    fi
fi
old=$("$ENGINE" image inspect --format '{{.Id}}' "$tag" 2>/dev/null || true)
echo "$ENGINE ${args[*]} $root"
start=$(date +%s)
"$ENGINE" "${args[@]}" "$root"
echo "built $tag in $(( $(date +%s) - start )) s"
if [ -n "$old" ]; then ENGINE=$ENGINE "$here/drop-replaced.sh" "$old" "$tag"; fi
"$ENGINE" image ls "$tag"
