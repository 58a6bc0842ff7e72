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
