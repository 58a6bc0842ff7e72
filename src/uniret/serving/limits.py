"""ASGI middleware refusing request bodies above a size limit (413) before anything parses them."""

from __future__ import annotations

import json

Scope = dict
Message = dict


async def _send_413(send, limit: int) -> None:
    body = json.dumps({"detail": f"request body too large: the limit is {limit} bytes"}).encode()
    await send({
        "type": "http.response.start",
        "status": 413,
        "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
    })
    await send({"type": "http.response.body", "body": body})


class BodySizeLimit:
    """Reads at most `limit` bytes of an HTTP request body; above it answers 413 and drops the rest.

    A declared Content-Length above the limit is refused at once; a chunked body is counted as
    it arrives. Accepted bodies are buffered (they are small by construction) and replayed.
    """

    def __init__(self, app, limit: int):
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive, send) -> None:
        if scope["type"] != "http" or scope.get("method") in ("GET", "HEAD", "OPTIONS"):
            await self.app(scope, receive, send)
            return
        for name, value in scope.get("headers", []):
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    declared = 0  # malformed: fall back to counting
                if declared > self.limit:
                    await _send_413(send, self.limit)
                    return
        chunks: list[bytes] = []
        size = 0
        more = True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.limit:
                await _send_413(send, self.limit)
                return
            chunks.append(chunk)
            more = message.get("more_body", False)
        body = b"".join(chunks)
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


class ClientRateLimiter:
    """A token bucket per client id: `rate` tokens a second, at most `burst` held.

    Bounded memory: at most `max_clients` buckets, the least recently seen evicted first (an evicted
    client simply starts again with a full bucket). Called from the event loop only; a lock keeps it
    safe anyway.
    """

    def __init__(self, rate: float, burst: int, max_clients: int = 100_000, clock=None):
        import threading
        import time
        from collections import OrderedDict

        self.rate = float(rate)
        self.burst = float(burst)
        self.max_clients = max_clients
        self._clock = clock or time.monotonic
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()  # client -> (tokens, at)
        self._lock = threading.Lock()

    def allow(self, client_id: str, n: int = 1) -> bool:
        """Take `n` tokens from `client_id`'s bucket; False (nothing taken) when it holds fewer."""
        now = self._clock()
        with self._lock:
            tokens, at = self._buckets.pop(client_id, (self.burst, now))
            tokens = min(self.burst, tokens + (now - at) * self.rate)
            allowed = tokens >= n
            if allowed:
                tokens -= n
            self._buckets[client_id] = (tokens, now)
            while len(self._buckets) > self.max_clients:
                self._buckets.popitem(last=False)
        return allowed
