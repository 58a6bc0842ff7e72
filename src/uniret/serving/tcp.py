"""uvicorn's HTTP protocol (httptools, its C parser) with TCP_NODELAY on every connection.

asyncio turns Nagle's algorithm off only on sockets whose `proto` is IPPROTO_TCP. uvicorn binds the
listening socket itself when it runs several worker processes (`socket.socket(family)`, proto 0),
so connections accepted there keep Nagle on: a response written in two segments then waits for the
client's delayed ACK, and `serve.workers: 2` answered every keep-alive request in about 44 ms
instead of 1.5 (E66). With one worker uvicorn lets asyncio bind, and the option was already set.

The protocol is httptools', named, not uvicorn's `auto`: `auto` falls back to the pure-Python h11
parser when httptools is missing, silently, and that cost the served mode about 0.5 ms of CPU a
request (E86). A missing httptools now fails at start-up.
"""

from __future__ import annotations

import asyncio
import logging
import socket

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

log = logging.getLogger("uniret.serving")


def enable_nodelay(transport: asyncio.BaseTransport) -> bool:
    """TCP_NODELAY on the transport's TCP socket; False where there is none (a Unix socket) or it fails."""
    sock = transport.get_extra_info("socket")
    if sock is None or sock.family not in (socket.AF_INET, socket.AF_INET6):
        return False
    try:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    except OSError as exc:  # the connection may already be gone: serving it fails or not on its own
        log.debug("TCP_NODELAY not set: %s", exc)
        return False
    return True


class NoDelayHttpProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol, with Nagle's algorithm off on each connection."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        enable_nodelay(transport)
        super().connection_made(transport)
