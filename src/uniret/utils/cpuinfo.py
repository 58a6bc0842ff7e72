"""/proc/cpuinfo, read one field at a time (the CPU's model name, vendor, feature flags)."""

from __future__ import annotations

CPUINFO = "/proc/cpuinfo"


def cpuinfo_field(name: str, cpuinfo: str = CPUINFO) -> str | None:
    """The value of the first `name` line of /proc/cpuinfo, stripped; None where there is none or it
    cannot be read (not Linux)."""
    try:
        with open(cpuinfo, encoding="utf-8", errors="replace") as handle:
            for line in handle:
                if line.startswith(name):
                    return line.partition(":")[2].strip()
    except OSError:
        pass
    return None
