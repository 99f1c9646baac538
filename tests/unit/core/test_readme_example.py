"""The README's Python blocks run as written, in order, against a warehouse in a temporary folder,
and then its ``mixed-iceberg`` commands against the table they made."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from mixed_iceberg import MixedTable
from tests.support.tables import rows_of

README = Path(__file__).resolve().parents[3] / "README.md"


def python_blocks(text: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", text, flags=re.DOTALL | re.MULTILINE)


def cli_commands(text: str) -> list[list[str]]:
    """The ``.venv/bin/mixed-iceberg ...`` lines of the README's bash blocks, comments dropped."""
    blocks = re.findall(r"^```bash\n(.*?)^```", text, flags=re.DOTALL | re.MULTILINE)
    lines = [line.split("#", 1)[0].strip() for block in blocks for line in block.splitlines()]
    return [shlex.split(line) for line in lines if line.startswith(".venv/bin/mixed-iceberg ")]


def test_readme_python_blocks_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocks = python_blocks(README.read_text())
    assert len(blocks) >= 2, "expected the library example and the optimizing example"
    # conf/catalogs.yaml's `local` catalog keeps its SQLite file and data under this folder.
    monkeypatch.setenv("MIXED_ICEBERG_WAREHOUSE_DIR", str(tmp_path))
    monkeypatch.delenv("MIXED_ICEBERG_CATALOGS", raising=False)
    monkeypatch.delenv("MIXED_ICEBERG_HOME", raising=False)
    namespace: dict[str, object] = {}
    exec(compile(blocks[0], f"{README}: first python block", "exec"), namespace)
    table = namespace["table"]
    assert isinstance(table, MixedTable)
    # bulk load 1, 2, 3; then 2 updated (qty 1 -> 9), 3 deleted, 4 inserted
    assert rows_of(table.scan().to_arrow()) == [(1, "a", 5), (2, "b", 9), (4, "d", 2)]
    assert (tmp_path / "catalog.db").exists()
    for number, block in enumerate(blocks[1:], start=2):
        exec(compile(block, f"{README}: python block {number}", "exec"), namespace)
    assert rows_of(table.scan().to_arrow()) == [(1, "a", 5), (2, "b", 9), (4, "d", 2)]
    # The README's CLI lines, with this interpreter's console script (the venv's, as the README says).
    commands = cli_commands(README.read_text())
    assert [c[1] for c in commands] == ["status", "optimize", "sql"], commands
    script = Path(sys.executable).parent / "mixed-iceberg"
    env = {**os.environ, "MIXED_ICEBERG_WAREHOUSE_DIR": str(tmp_path)}
    env.pop("MIXED_ICEBERG_CATALOGS", None)
    for command in commands:
        done = subprocess.run([str(script), *command[1:]], env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, f"{shlex.join(command)}: {done.stderr[-3000:]}"
        # status and optimize name the table; sql prints the merged view's three rows
        assert ("(3 rows" if command[1] == "sql" else "db.orders") in done.stdout, done.stdout
    assert rows_of(table.refresh().scan().to_arrow()) == [(1, "a", 5), (2, "b", 9), (4, "d", 2)]
