#!/usr/bin/env bash
# The version requirements.txt pins for a package, for the shell steps that install it first or
# look for its wheel (scripts/install.sh, `make lock`, docker/build.sh): one reader of the pin.
#   scripts/pin.sh torch [REQUIREMENTS]   ->  2.13.0
set -euo pipefail
name=${1:?usage: scripts/pin.sh NAME [REQUIREMENTS]}
file=${2:-$(dirname "$0")/../requirements.txt}
version=$(sed -n "s/^$name==\([^ #;]*\).*/\1/p" "$file")
if [ -z "$version" ]; then
    echo "pin.sh: $file pins no $name (a line '$name==VERSION')" >&2
    exit 1
fi
echo "$version"
