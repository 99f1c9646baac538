"""The serve process: its listening socket, its refusal to start exposed without a token."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from mixed_iceberg.cli.main import main
from mixed_iceberg.service.server import _bind


def test_the_listening_socket_is_tcp_so_asyncio_sets_nodelay_on_every_connection() -> None:
    """asyncio sets TCP_NODELAY only on sockets whose proto is IPPROTO_TCP; without it every
    response with a body waited 40 ms on the client's delayed ACK (headers and body are two writes)."""
    sock = _bind("127.0.0.1", 0)
    try:
        assert sock.proto == socket.IPPROTO_TCP
        client = socket.create_connection(sock.getsockname()[:2])
        accepted, _ = sock.accept()
        assert accepted.proto == socket.IPPROTO_TCP
        accepted.close()
        client.close()
    finally:
        sock.close()


def test_serve_refuses_to_start_on_a_public_address_without_a_token(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("MIXED_ICEBERG_REST_TOKENS", raising=False)
    monkeypatch.delenv("MIXED_ICEBERG_REST_CREDENTIALS", raising=False)
    (tmp_path / "service.yaml").write_text("host: 0.0.0.0\nport: 0\n")
    assert main(["serve", "--config", str(tmp_path / "service.yaml")]) == 2
    assert "no token is configured" in capsys.readouterr().err


def test_serve_runs_on_httptools_and_answers_without_a_delayed_ack() -> None:
    """serve picks uvicorn's C parser (a declared dependency, ``uvicorn_parts``); a response with a
    body still leaves at once over a kept-alive connection: one without TCP_NODELAY would wait on
    the client's delayed ACK (about 40 ms) for every answer split in two writes."""
    import http.client
    import threading
    import time

    import uvicorn
    from starlette.applications import Starlette
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    from mixed_iceberg.service.server import uvicorn_parts

    assert uvicorn_parts() == {"http": "httptools", "loop": "asyncio"}
    app = Starlette(routes=[Route("/x", lambda request: JSONResponse({"body": "x" * 100}))])
    sock = _bind("127.0.0.1", 0)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off", **uvicorn_parts()))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 30
        while not server.started and time.monotonic() < deadline:
            time.sleep(0.01)
        connection = http.client.HTTPConnection(*sock.getsockname()[:2], timeout=10)  # kept alive, as clients do
        seconds = []
        for _ in range(15):
            started = time.perf_counter()
            connection.request("GET", "/x")
            assert len(connection.getresponse().read()) > 100
            seconds.append(time.perf_counter() - started)
        connection.close()
        assert sorted(seconds)[len(seconds) // 2] < 0.030, seconds
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()
