"""uv's environment for installing the pinned stack: `python scripts/uv_env.py [--shell] [--lock FILE]`
prints one `NAME=value` line (`--shell`: `export NAME='value'`, for eval) per setting: pip's
configuration as uv reads it from its own variables (indexes, wheel folders, constraint files, trusted
hosts, the CA bundle), from `pip config list` of the interpreter running it (its files and PIP_*
variables; the variables win, as they do for pip), then uv's own settings of the install (UV_SETTINGS)
and FILE appended to the constraints. scripts/install.sh and docker/Dockerfile export them before they
run uv (E90), so both install alike."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys

# pip's setting -> (uv's variable, the separator uv reads between several values)
UV_NAMES = {"index-url": ("UV_DEFAULT_INDEX", " "), "extra-index-url": ("UV_EXTRA_INDEX_URL", " "),
            "find-links": ("UV_FIND_LINKS", ","), "constraint": ("UV_CONSTRAINT", " "),
            "trusted-host": ("UV_INSECURE_HOST", " "), "cert": ("SSL_CERT_FILE", " ")}
# unsafe-best-match: the best version over every index, as pip takes (uv's default stops at the first
# index that has the package); bytecode compiled now, as pip does: where PYTHONDONTWRITEBYTECODE is set
# (these machines, the image) every process would otherwise compile what it imports (torch 3.4 s, not 1.4: E90)
UV_SETTINGS = {"UV_INDEX_STRATEGY": "unsafe-best-match", "UV_COMPILE_BYTECODE": "1", "UV_NO_PROGRESS": "1"}
_LINE = re.compile(r"^(?P<section>\S*)\.(?P<key>[\w-]+)='(?P<value>.*)'$")


def uv_environment(pip_config_list: str) -> dict[str, str]:
    """{uv variable: value} from the text `pip config list` prints (section.key='value' lines)."""
    found: dict[str, tuple[str, str]] = {}
    for line in pip_config_list.splitlines():
        m = _LINE.match(line.strip())
        if not m or m["key"] not in UV_NAMES:
            continue
        from_env = m["section"] == ":env:"
        if from_env or m["key"] not in found or found[m["key"]][0] != ":env:":
            found[m["key"]] = (m["section"], m["value"])
    out = {}
    for key, (_, value) in found.items():
        name, separator = UV_NAMES[key]
        out[name] = separator.join(value.split())
    return out


def install_environment(pip_config_list: str, lock: str | None = None) -> dict[str, str]:
    """uv_environment, uv's own settings of the install, and `lock` added to the machine's constraints
    (a --constraint flag would replace them, not add to them)."""
    env = {**uv_environment(pip_config_list), **UV_SETTINGS}
    if lock:
        env["UV_CONSTRAINT"] = " ".join(filter(None, [env.get("UV_CONSTRAINT"), lock]))
    return env


def main() -> None:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shell", action="store_true", help="export lines, for eval")
    parser.add_argument("--lock", help="a constraints file added to the machine's (requirements.lock)")
    args = parser.parse_args()
    listed = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True,
                            check=False).stdout
    shell = args.shell
    for name, value in install_environment(listed, args.lock).items():
        print(f"export {name}={shlex.quote(value)}" if shell else f"{name}={value}")


if __name__ == "__main__":
    main()
