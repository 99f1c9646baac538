"""The benchmarks the README names run, in their short mode, as written: ``python -m bench.format_core``.

``python -m bench.ingest`` and ``make bench-peers`` are left out for their length (see
``tests/unit/core/test_docs_commands.py``, where every offered command is accounted for).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.support.services import ROOT


def test_format_core_quick_run_reports_every_figure_beside_its_baseline(tmp_path: Path) -> None:
    output = tmp_path / "format_core.json"
    done = subprocess.run(
        [sys.executable, "-m", "bench.format_core", "--quick", "--output", str(output)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    run = json.loads(output.read_text())
    assert run["bench"] == "format_core"
    assert run["config"]["quick"] is True
    figures = {figure["name"]: figure for figure in run["figures"]}
    assert "1 bulk load: write" in figures
    assert all(figure["value"] is not None for figure in figures.values()), figures
    assert f"JSON: {output}" in done.stderr
