"""``jobs/ingest_cdc.py`` refuses what a user got wrong in one line and a non-zero exit, as the
optimizer job does: a missing or malformed config file, a bad ``--set``, an unknown catalog.
No Kafka or Flink is reached: each case fails before the job is built."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("confluent_kafka", reason="the kafka extra: the job's client imports the Kafka backend")

ROOT = Path(__file__).resolve().parents[3]


def _run_job(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "jobs/ingest_cdc.py", *args],
        cwd=ROOT,
        env={**os.environ, "MIXED_ICEBERG_WAREHOUSE_DIR": str(tmp_path / "wh"), **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--config", "{tmp}/missing.yaml"], "ingest config: cannot read {tmp}/missing.yaml: No such file or directory"),
        (
            ["--set", "parallelism=two"],
            "parallelism: Input should be a valid integer, unable to parse string as an integer (found 'two')",
        ),
        (["--set", "parallelism"], "--set expects key=value, found 'parallelism'"),
        (["--set", "catalog=nowhere"], "no catalog named 'nowhere'"),
    ],
    ids=["missing-file", "bad-set-value", "set-without-value", "unknown-catalog"],
)
def test_a_bad_config_is_one_line_and_exit_status_2(tmp_path: Path, args: list[str], says: str) -> None:
    done = _run_job(tmp_path, *(a.format(tmp=tmp_path) for a in args))
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2, done.stderr
    assert len(lines) == 1, done.stderr  # no traceback
    assert lines[0].startswith("ingest job: ")
    assert says.format(tmp=tmp_path) in lines[0]


def test_a_flink_key_with_dots_can_be_set_from_the_command_line() -> None:
    from mixed_iceberg.ingest.config import load_ingest_config

    config = load_ingest_config(
        ROOT / "conf" / "ingest.yaml", {"flink.rest.bind-address": "0.0.0.0", "source.properties.a.b": "1"}
    )
    assert config.flink["rest.bind-address"] == "0.0.0.0"
    assert config.source.properties == {"a.b": "1"}


@pytest.mark.parametrize(
    ("text", "overrides", "says"),
    [
        ("job-name: [unclosed\n", {}, "not valid YAML"),
        ("- a list\n", {}, "expected a mapping, found list"),
        ("", {"source.topic.name": "x"}, "source.topic.name: 'topic' holds a value, not keys"),
    ],
    ids=["malformed-yaml", "not-a-mapping", "set-below-a-value"],
)
def test_a_malformed_config_is_a_config_error(tmp_path: Path, text: str, overrides: dict[str, str], says: str) -> None:
    from mixed_iceberg.exceptions import ConfigError
    from mixed_iceberg.ingest.config import load_ingest_config

    path = tmp_path / "ingest.yaml"
    path.write_text(text or (ROOT / "conf" / "ingest.yaml").read_text())
    with pytest.raises(ConfigError, match=re.escape(says)):
        load_ingest_config(path, overrides)
