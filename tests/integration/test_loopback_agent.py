"""The loopback agent (java/loopback-agent/), on its own: built by ``scripts/jars/loopback-agent.sh``
(cached), it makes the vendored gRPC builder that flink-python 2.2.1's Beam binds its Fn API
servers with listen on 127.0.0.1, and without it the same call listens on every interface (the
reason it exists: the day flink-python binds loopback itself, the first test fails and the agent
can go). Where flink-python has another Beam, it warns once and changes nothing. A JVM start or
two each, about a second; the real ingest job with the agent runs in test_make_targets.py."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support.services import ROOT

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(shutil.which("java") is None, reason="the agent is a java agent: Java 17 is needed"),
]

_SELF_CHECK = "mixediceberg.loopback.SelfCheck"


@pytest.fixture(scope="module")
def agent() -> Path:
    script = ROOT / "scripts" / "jars" / "loopback-agent.sh"
    done = subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=600, check=False, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    return Path(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def flink_python() -> Path:
    pyflink = pytest.importorskip("pyflink", reason="the flink extra: flink-python's jar")
    (jar,) = (Path(pyflink.__file__).parent / "opt").glob("flink-python-*.jar")
    return jar


def _java(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["java", *args], capture_output=True, text=True, timeout=120, check=False, cwd=cwd)


def _listen_addresses(done: subprocess.CompletedProcess[str]) -> list[str]:
    assert done.returncode == 0, done.stderr
    return [line.rsplit(":", 1)[0] for line in done.stdout.split()]


def test_without_the_agent_beams_grpc_builder_listens_on_every_interface(agent: Path, flink_python: Path) -> None:
    addresses = _listen_addresses(_java("-cp", f"{agent}:{flink_python}", _SELF_CHECK))
    assert addresses in (["/[0:0:0:0:0:0:0:0%0]"], ["/0.0.0.0"]), addresses


def test_with_the_agent_it_listens_on_loopback_only(agent: Path, flink_python: Path) -> None:
    addresses = _listen_addresses(_java(f"-javaagent:{agent}", "-cp", f"{agent}:{flink_python}", _SELF_CHECK))
    assert addresses == ["/127.0.0.1"]


def test_another_beam_gets_one_warning_and_runs_unchanged(agent: Path, tmp_path: Path) -> None:
    """A ServerFactory (Beam's class name, our two-line stand-in) loads without the vendored gRPC
    builder the agent knows: one warning, and the program runs."""
    source = tmp_path / "org" / "apache" / "beam" / "sdk" / "fn" / "server" / "ServerFactory.java"
    source.parent.mkdir(parents=True)
    source.write_text(
        "package org.apache.beam.sdk.fn.server;\n"
        'public class ServerFactory { public static void main(String[] a) { System.out.println("ran"); } }\n'
    )
    compiled = subprocess.run(["javac", str(source)], capture_output=True, text=True, timeout=120, check=False)
    assert compiled.returncode == 0, compiled.stderr
    done = _java(f"-javaagent:{agent}", "-cp", str(tmp_path), "org.apache.beam.sdk.fn.server.ServerFactory", cwd=tmp_path)
    assert (done.returncode, done.stdout) == (0, "ran\n"), done.stderr
    warnings = [line for line in done.stderr.splitlines() if "WARN" in line]
    assert len(warnings) == 1, done.stderr
    assert "loaded without org.apache.beam.vendor.grpc.v1p60p1.io.grpc.netty.NettyServerBuilder" in warnings[0]
    assert "every interface" in warnings[0]
