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
