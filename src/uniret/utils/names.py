"""Plain names: a value used as one folder name under a root can never point outside it."""

from __future__ import annotations

import re

# letters, digits, `.`, `_`, `-`, starting with a letter or digit: no separator, no `..`, not absolute
_PLAIN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
PLAIN_RULE = "a plain folder name (letters, digits, . _ -; no '/', no '..', not absolute)"


def is_plain_name(name: object) -> bool:
    """True when `name` is a string usable as a single folder name under a root."""
    return isinstance(name, str) and bool(_PLAIN.match(name)) and ".." not in name
