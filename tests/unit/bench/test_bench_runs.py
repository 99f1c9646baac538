"""The benchmarks the README names run, in their short mode, as written: ``python -m bench.format_core``;
and ``bench.design_choices``, whose stored run the code comments cite, on tiny sizes.

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


def test_design_choices_quick_run_measures_every_claim_beside_its_alternative(tmp_path: Path) -> None:
    """``python -m bench.design_choices --quick`` on tiny sizes: every claim is measured, ours
    beside the alternative, each with its repetitions, a verdict and a note; no figure is judged."""
    output = tmp_path / "design_choices.json"
    command = [sys.executable, "-m", "bench.design_choices", "--quick", "--scale", "0.005", "--repeats", "2"]
    done = subprocess.run([*command, "--output", str(output)], cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    run = json.loads(output.read_text())
    assert run["bench"] == "design_choices"
    assert run["config"]["quick"] is True
    assert run["config"]["repeats"] == 2
    claims = {
        "sort_nodes",
        "sort_hashes",
        "delete_writes",
        "small_files",
        "small_files_key",
        "many_files",
        "position_deletes",
        "newline_check",
        "keep_rows_small",
        "keep_rows_mid",
        "keep_rows_large",
        "key_lookup",
    }
    assert set(run["detail"]) == claims
    for key, measured in run["detail"].items():
        for series in ("ours_wall_s", "alternative_wall_s", "ours_cpu_s", "alternative_cpu_s"):
            assert len(measured[series]) == 2, (key, series)
        assert measured["verdict_wall"] in {"ours faster", "alternative faster", "within noise"}, key
    figures = {figure["name"]: figure for figure in run["figures"]}
    assert {name.split(":")[0] for name in figures} == claims
    assert all(figure["value"] is not None and figure["baseline"] is not None for figure in figures.values()), figures
    assert "small_files: CPU, median" in figures  # the claims about CPU report it
    assert len(run["notes"]) == len(figures)
    assert "| figure | baseline | value | value / baseline |" in done.stdout


def test_metrics_scrape_quick_run_checks_every_scrape_and_reports_each_figure(tmp_path: Path) -> None:
    """``bench.metrics_scrape --quick``: its scrapes' figures are checked inside (one summary and
    the recorded process counts per table), and every figure is measured."""
    output = tmp_path / "metrics_scrape.json"
    command = [sys.executable, "-m", "bench.metrics_scrape", "--quick", "--tables", "10", "--output", str(output)]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    run = json.loads(output.read_text())
    figures = {figure["name"]: figure["value"] for figure in run["figures"]}
    assert run["config"]["tables"] == 10
    assert all(value is not None for value in figures.values()), figures
    assert figures["tables left stale by the 5 s budget"] == 0


def test_dashboard_list_quick_run_lists_every_table_with_its_figures(tmp_path: Path) -> None:
    """``python -m bench.dashboard_list --quick`` on 20 tables: the list answers every table
    (the bench checks each row's figures) and each figure stands beside loading every table."""
    output = tmp_path / "dashboard_list.json"
    command = [sys.executable, "-m", "bench.dashboard_list", "--quick", "--tables", "20", "--repeat", "2"]
    command += ["--output", str(output)]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    run = json.loads(output.read_text())
    assert run["bench"] == "dashboard_list"
    assert run["config"]["tables"] == 20
    figures = {figure["name"]: figure for figure in run["figures"]}
    assert figures["list, every table: best"]["value"] is not None
    assert figures["list, every table: best"]["baseline"] is not None


def test_point_lookup_quick_run_finds_every_key_and_plans_fewer_files(tmp_path: Path) -> None:
    """``python -m bench.point_lookup --quick``: every lookup returns its one row (checked inside)
    in both modes, and node pruning plans fewer files than the full plan of the same table."""
    output = tmp_path / "point_lookup.json"
    command = [sys.executable, "-m", "bench.point_lookup", "--quick", "--rows", "4000", "--lookups", "3"]
    command += ["--output", str(output)]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    figures = {f["name"]: f for f in json.loads(output.read_text())["figures"]}
    planned = figures["files a lookup plans"]
    assert planned["value"] < planned["baseline"]
