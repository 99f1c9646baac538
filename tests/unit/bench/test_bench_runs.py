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


def test_optimizer_scale_quick_run_measures_both_systems_on_the_same_catalog_shape(tmp_path: Path) -> None:
    """The scale benchmark's short mode, shorter still: 60 tables, 3 active, a 2 s refresh."""
    output = tmp_path / "optimizer_scale.json"
    command = [sys.executable, "-m", "bench.optimizer_scale", "--quick", "--tables", "60", "--active", "3"]
    command += ["--rounds", "1", "--refresh", "2", "--idle-seconds", "2", "--commit-every", "0.1", "--output", str(output)]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    run = json.loads(output.read_text())
    assert run["bench"] == "optimizer_scale"
    figures = {figure["name"]: figure for figure in run["figures"]}
    for name in ("idle round: CPU", "idle round: system-database queries", "planning latency past due: max"):
        assert figures[name]["value"] is not None, figures[name]
        assert figures[name]["baseline"] is not None, figures[name]
    assert run["detail"]["ours"]["discovery"]["served"] == run["detail"]["baseline"]["discovery"]["served"] == 60
    assert figures["due tables not planned within the timeout"]["value"] == 0
    # The baseline loads every table each round; this code reads the catalog once.
    assert figures["idle round: catalog queries"]["value"] < figures["idle round: catalog queries"]["baseline"]
