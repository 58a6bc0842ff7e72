"""pip's configuration as uv's: `python scripts/uv_env.py [--shell]` prints one `NAME=value` line
(`--shell`: `export NAME='value'`, for eval) per setting uv reads from its own variables (indexes,
wheel folders, constraint files, trusted hosts, the CA bundle), from `pip config list` of the
interpreter running it (its files and PIP_* variables; the variables win, as they do for pip).
scripts/install.sh and docker/Dockerfile export them before they run uv (E90)."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys

# pip's setting -> (uv's variable, the separator uv reads between several values)
UV_NAMES = {"index-url": ("UV_DEFAULT_INDEX", " "), "extra-index-url": ("UV_EXTRA_INDEX_URL", " "),
            "find-links": ("UV_FIND_LINKS", ","), "constraint": ("UV_CONSTRAINT", " "),
            "trusted-host": ("UV_INSECURE_HOST", " "), "cert": ("SSL_CERT_FILE", " ")}
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


def main() -> None:
    listed = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True,
                            check=False).stdout
    shell = "--shell" in sys.argv[1:]
    for name, value in uv_environment(listed).items():
        print(f"export {name}={shlex.quote(value)}" if shell else f"{name}={value}")


if __name__ == "__main__":
    main()
