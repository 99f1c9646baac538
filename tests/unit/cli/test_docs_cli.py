"""docs/cli.md's walkthrough (its first bash block) runs as written, in order, against a fresh
catalog; each line exits 0 and prints something (JSON where it says --json). The page's ``sql``
examples run in tests/unit/query/test_terminal.py."""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.unit.cli.conftest import Run

ROOT = Path(__file__).resolve().parents[3]


def page_commands() -> list[list[str]]:
    text = (ROOT / "docs" / "cli.md").read_text()
    walkthrough = re.findall(r"^```bash\n(.*?)^```", text, flags=re.DOTALL | re.MULTILINE)[0]
    lines = [line.split("#", 1)[0].strip() for line in walkthrough.splitlines()]
    return [shlex.split(line) for line in lines if line.startswith("mixed-iceberg ")]


def test_docs_cli_commands_run_as_written(conf: Path, cli: Callable[..., Run], monkeypatch: pytest.MonkeyPatch) -> None:
    (conf.parent / "optimizer.yaml").write_text(
        f"system-database: sqlite:///{conf.parent}/system.db\noptimizer_groups: [{{name: default}}]\n"
    )
    monkeypatch.chdir(ROOT)  # the page names conf/tables/orders.yaml
    commands = page_commands()
    assert len(commands) >= 14, commands
    for command in commands:
        run = cli(*command[1:])
        assert run.code == 0, f"{shlex.join(command)}: {run.err}"
        assert run.out.strip(), shlex.join(command)
        if "--json" in command:
            json.loads(run.out)
