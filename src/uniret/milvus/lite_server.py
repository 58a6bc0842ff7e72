"""`python -m uniret.milvus.lite_server --db FILE --port N`: Milvus Lite (2.5.1, the C++ engine) on a
TCP port, so that several processes (an export, a server, a test) reach one data file at
http://127.0.0.1:N as they would reach a cluster. A `.db` URI instead starts a private server per
process, and only one process may hold a data file at a time.

It runs until SIGTERM or SIGINT, then stops the engine. For a single-machine trial only: a
production deployment runs Milvus itself (docs/milvus.md: Milvus Operator or Helm).
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path

from uniret.milvus.client import LITE_SUFFIX, import_milvus_lite


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m uniret.milvus.lite_server", description=__doc__.splitlines()[0])
    parser.add_argument("--db", required=True, help=f"Milvus Lite data file (ends in {LITE_SUFFIX}; created if absent)")
    parser.add_argument("--port", type=int, required=True, help="TCP port to listen on")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default: loopback)")
    args = parser.parse_args(argv)
    db = Path(args.db).expanduser().resolve()
    if db.suffix != LITE_SUFFIX or not db.parent.is_dir():
        print(f"{args.db}: a Milvus Lite data file ends in {LITE_SUFFIX} and its folder must exist", file=sys.stderr)
        return 2
    import_milvus_lite()
    from milvus_lite.server import Server

    server = Server(str(db), address=f"{args.host}:{args.port}")
    if not server.init() or not server.start():
        print(f"{db}: Milvus Lite did not start (is the file held by another process, or the port taken?)",
              file=sys.stderr)
        return 1
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    print(f"Milvus Lite on http://{args.host}:{args.port} ({db})", flush=True)
    stop.wait()
    server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
