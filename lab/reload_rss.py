"""Server memory over repeated hot reloads (issue 12): RSS after each reload of a tiny bundle.

Usage: python lab/reload_rss.py BUNDLE [--reloads N] [--out lab/results/reload_rss.json]
Builds the serving state the server uses (same loader, probe and swap) and reloads BUNDLE N times,
recording the process RSS; run it once per variant to compare (--no-trim: without the fix).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024.0
    return float("nan")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("bundle")
    parser.add_argument("--reloads", type=int, default=100)
    parser.add_argument("--no-trim", action="store_true", help="do not release freed memory after a swap")
    parser.add_argument("--out", default="lab/results/reload_rss.json")
    args = parser.parse_args()

    from uniret.serving import state as state_mod
    from uniret.serving.source import bundle_loader
    from uniret.serving.state import ServingState

    if args.no_trim:
        state_mod.release_memory = lambda: None
    state = ServingState(bundle_loader(1), "cancer cells", None)
    series = []
    start = time.time()
    for i in range(args.reloads):
        state.reload(Path(args.bundle), f"v{i}")
        series.append(round(rss_mb(), 1))
    state.close()
    result = {"reloads": args.reloads, "trim": not args.no_trim, "rss_mb_first": series[0], "rss_mb_last": series[-1],
              "rss_mb_max": max(series), "rss_mb_every_10": series[::10], "seconds": round(time.time() - start, 1)}
    out = Path(args.out)
    data = json.loads(out.read_text()) if out.is_file() else {}
    data["trim" if result["trim"] else "no_trim"] = result
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(data, indent=2) + "\n")
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
