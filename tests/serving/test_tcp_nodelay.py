"""Nagle's algorithm off on every served connection, also where uvicorn binds the listening socket
itself (several workers: proto 0, which asyncio does not set TCP_NODELAY on), and `uniret serve
--workers 2` answering keep-alive requests on such connections."""

from __future__ import annotations

import asyncio
import socket

from uniret.serving.tcp import NoDelayHttpProtocol, enable_nodelay


def _nodelay(sock) -> int:
    return sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)


def test_a_connection_accepted_on_a_proto_0_socket_gets_nodelay():
    """As uvicorn's bind_socket does for several workers: without the call the option stays off."""
    seen = {}

    class Probe(asyncio.Protocol):
        def connection_made(self, transport):
            seen["before"] = _nodelay(transport.get_extra_info("socket"))
            seen["set"] = enable_nodelay(transport)
            seen["after"] = _nodelay(transport.get_extra_info("socket"))
            transport.close()

    async def run():
        listener = socket.socket(family=socket.AF_INET)  # proto 0, as uvicorn binds it
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        server = await asyncio.get_running_loop().create_server(Probe, sock=listener)
        reader, writer = await asyncio.open_connection(*listener.getsockname())
        await reader.read()
        writer.close()
        server.close()
        await server.wait_closed()

    asyncio.run(run())
    assert seen == {"before": 0, "set": True, "after": 1}


def test_uvicorns_protocol_as_serve_runs_it_answers_with_nodelay_on():
    """NoDelayHttpProtocol with a real uvicorn config on a proto-0 listener: a keep-alive request is
    answered, and the server side of the connection has Nagle off."""
    from uvicorn.config import Config
    from uvicorn.server import ServerState

    async def app(scope, receive, send):
        assert scope["type"] == "http"
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
        await send({"type": "http.response.body", "body": b"ok"})

    config = Config(app=app, lifespan="off", log_level="warning")
    config.load()
    state, made = ServerState(), []

    def factory():
        made.append(NoDelayHttpProtocol(config=config, server_state=state, app_state={}))
        return made[-1]

    async def run():
        listener = socket.socket(family=socket.AF_INET)
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        server = await asyncio.get_running_loop().create_server(factory, sock=listener)
        reader, writer = await asyncio.open_connection(*listener.getsockname())
        answers = []
        for _ in range(2):  # the same connection twice: keep-alive
            writer.write(b"GET / HTTP/1.1\r\nhost: x\r\n\r\n")
            await writer.drain()
            head = await reader.readuntil(b"\r\n\r\n")
            answers.append((head.split(b"\r\n")[0], await reader.readexactly(2)))
        server_side = _nodelay(made[0].transport.get_extra_info("socket"))
        writer.close()
        server.close()
        await server.wait_closed()
        return answers, server_side

    answers, server_side = asyncio.run(run())
    assert answers == [(b"HTTP/1.1 200 OK", b"ok")] * 2 and len(made) == 1
    assert server_side == 1


def test_serve_names_the_c_parser_and_loop_so_a_missing_one_fails_instead_of_falling_back():
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    from uniret.commands.serve_cmd import uvicorn_options
    from uniret.config.serving import ServeConfig

    options = uvicorn_options(ServeConfig())
    assert options["loop"] == "uvloop" and issubclass(options["http"], HttpToolsProtocol)
