"""What a local PyFlink client sets before its JVM starts: the loopback agent's jar (or none, where
``MIXED_ICEBERG_LOOPBACK_AGENT=off`` says so) and the ``JVM_ARGS`` PyFlink's launcher passes on.
The agent itself is checked in tests/integration/test_loopback_agent.py."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mixed_iceberg.exceptions import ConfigError
from mixed_iceberg.flink_client import LOOPBACK_AGENT_JAR, loopback_agent, prepare_flink_client


@pytest.mark.parametrize("setting", ["off", "OFF", " off "])
def test_the_loopback_agent_can_be_turned_off(monkeypatch: pytest.MonkeyPatch, setting: str) -> None:
    monkeypatch.setenv("MIXED_ICEBERG_LOOPBACK_AGENT", setting)
    assert loopback_agent() is None


def test_the_loopback_agent_is_the_jar_named_or_the_built_one(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    jar = tmp_path / "agent.jar"
    jar.write_bytes(b"PK")
    monkeypatch.setenv("MIXED_ICEBERG_LOOPBACK_AGENT", str(jar))
    assert loopback_agent() == jar
    monkeypatch.delenv("MIXED_ICEBERG_LOOPBACK_AGENT")
    assert LOOPBACK_AGENT_JAR.name == "mixed-iceberg-loopback-agent.jar"
    assert LOOPBACK_AGENT_JAR.parent.name == "agent"
    if LOOPBACK_AGENT_JAR.is_file():
        assert loopback_agent() == LOOPBACK_AGENT_JAR.resolve()


def test_a_missing_agent_jar_says_how_to_build_it_or_turn_it_off(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("MIXED_ICEBERG_LOOPBACK_AGENT", str(tmp_path / "missing.jar"))
    with pytest.raises(
        ConfigError, match=r"no loopback agent jar at .*missing\.jar: run `bash scripts/jars/loopback-agent\.sh`"
    ) as caught:
        loopback_agent()
    assert "MIXED_ICEBERG_LOOPBACK_AGENT=off" in str(caught.value)


def test_the_agent_joins_the_jvm_arguments_once(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("JVM_ARGS", "-Xmx1g -Djava.io.tmpdir=/elsewhere")
    monkeypatch.setenv("PYTHONPATH", "")
    monkeypatch.setenv("_python_worker_execution_mode", "process")
    jar = tmp_path / "agent.jar"
    scratch = prepare_flink_client(agent=jar)
    prepare_flink_client(agent=jar)
    assert os.environ["JVM_ARGS"].split() == ["-Xmx1g", f"-Djava.io.tmpdir={scratch}", f"-javaagent:{jar}"]
    prepare_flink_client()  # the optimizer job's: no agent asked for, none removed
    assert os.environ["JVM_ARGS"].split() == ["-Xmx1g", f"-Djava.io.tmpdir={scratch}", f"-javaagent:{jar}"]


def test_the_optimizer_job_in_process_mode_loads_the_agent_too(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Locally the optimizer job runs in thread mode and needs no agent; a config that asks for
    process mode gets Beam's gRPC servers, so its JVM must load the agent (here: refused without
    one, before any JVM starts)."""
    from mixed_iceberg.optimizer.job import main

    config = tmp_path / "optimizer.yaml"
    root = Path(__file__).resolve().parents[3]
    config.write_text((root / "conf" / "optimizer.yaml").read_text() + "\nflink:\n  python.execution-mode: process\n")
    monkeypatch.delenv("PYFLINK_GATEWAY_PORT", raising=False)
    monkeypatch.setenv("MIXED_ICEBERG_LOOPBACK_AGENT", str(tmp_path / "missing.jar"))
    assert main(["--config", str(config)]) == 2
    assert "no loopback agent jar at" in capsys.readouterr().err
