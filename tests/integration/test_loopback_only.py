"""The services the scripts start (``scripts/services/*.sh``) listen on loopback only.

Kafka, PostgreSQL and SeaweedFS are the session's own (tests/conftest.py); Kafka Connect is
checked in ``test_debezium_postgres.py`` and the Flink session cluster in
``test_flink_cluster_ingest.py``, where those services run anyway. The jobs' own mini-clusters
are checked while ``make demo`` runs them (``test_make_targets.py``), by
:class:`~tests.support.sockets.ListenerWatch`, which is checked here to exempt nothing, a gRPC
server included. The loopback agent that keeps Beam's gRPC servers off the network is checked
on its own in ``test_loopback_agent.py``.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.support.services import KAFKA, POSTGRES, SEAWEEDFS, ServiceScript
from tests.support.sockets import ListenerWatch, assert_loopback_only

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("service", [KAFKA, POSTGRES, SEAWEEDFS], ids=lambda s: s.name)
def test_session_services_listen_on_loopback_only(
    service: ServiceScript, kafka_bootstrap: str, postgres_url: str, s3_endpoint: object
) -> None:
    assert_loopback_only(service)


_GRPC_SERVER = """
import time
from concurrent import futures

import grpc

server = grpc.server(futures.ThreadPoolExecutor(1))
print(server.add_insecure_port("[::]:0"), flush=True)
server.start()
time.sleep(120)
"""
_TCP_SERVER = """
import socket, time

listener = socket.create_server(("0.0.0.0", 0))
print(listener.getsockname()[1], flush=True)
time.sleep(120)
"""


def test_a_wildcard_listener_is_exposed_a_grpc_server_too() -> None:
    """The watch exempts nothing: a gRPC server on the wildcard address (as Beam's Fn API servers
    were before the loopback agent) is reported, marked as gRPC, beside a plain one."""
    servers = [
        subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True) for code in (_GRPC_SERVER, _TCP_SERVER)
    ]
    try:
        grpc_port, tcp_port = (int(server.stdout.readline()) for server in servers if server.stdout is not None)
        watch = ListenerWatch(lambda: [server.pid for server in servers])
        watch.sample()
    finally:
        for server in servers:
            server.kill()
            server.communicate(timeout=30)
    assert {listener.port for listener in watch.grpc} == {grpc_port}, "the probe recognized the gRPC server"
    assert sorted(listener.port for listener in watch.exposed()) == sorted([grpc_port, tcp_port])
    (marked,) = [line for line in watch.report().splitlines() if line.startswith("gRPC: ")]
    assert f":{grpc_port} (pid " in marked, watch.report()
