"""The bench harness: its Markdown table, its JSON round trip and the commit a run records."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from bench.harness import RESULTS_DIR, Environment, Figure, Run, capture_environment, markdown, read_run, result_path, write_run
from bench.harness.environment import ROOT
from bench.harness.markdown import format_number


def _environment() -> Environment:
    return Environment(
        commit="0123456789abcdef0123456789abcdef01234567",
        dirty=False,
        python="3.11.7",
        pyarrow="20.0.0",
        pyiceberg="0.12.0",
        numpy="2.1.3",
        library="/src/mixed_iceberg",
        cpus=2,
        machine="x86_64",
        platform="Linux",
        started_at="2026-12-01T17:31:46+00:00",
        load_average_start=(1.5, 1.25, 1.0),
        load_average_end=(2.5, 1.5, 1.0),
    )


def _run(**changes: object) -> Run:
    fields: dict[str, object] = {
        "bench": "format_core",
        "environment": _environment(),
        "figures": [
            Figure("1 bulk load: write", 1_500_000.0, "rows/s", baseline=3_000_000.0),
            Figure("1 bulk load: merged read, best", 0.125, "s", baseline=0.5),
            Figure("live ChangeStore files", 12, "files"),
            Figure("a phase not reached", None, "s", baseline=0.25),
        ],
        "baseline": "one Parquet file per commit",
        "config": {"rows": 100_000, "quick": True, "phases": [("1 bulk load", 0, 100_000)]},
        "notes": ["target met: yes"],
        "detail": {"commit_ms": (1.5, 2.5), "by_store": {"base": 4}},
    }
    fields.update(changes)
    return Run(**fields)  # type: ignore[arg-type]


def test_markdown_table_has_a_row_per_figure_with_baseline_value_and_ratio() -> None:
    text = markdown(_run())
    rows = [line for line in text.splitlines() if line.startswith("|")]
    assert rows[:2] == ["| figure | baseline | value | value / baseline |", "|---|--:|--:|--:|"]
    assert rows[2:] == [
        "| 1 bulk load: write | 3,000,000 rows/s | 1,500,000 rows/s | 0.5x |",
        "| 1 bulk load: merged read, best | 0.5 s | 0.125 s | 0.25x |",
        "| live ChangeStore files | - | 12 files | - |",
        "| a phase not reached | 0.25 s | - | - |",
    ]


def test_markdown_heading_names_commit_load_settings_baseline_and_notes() -> None:
    text = markdown(_run(environment=_environment()))
    heading = text.splitlines()[0]
    assert "**format_core**" in heading
    assert "commit 0123456" in heading
    assert "dirty" not in heading
    assert "load average 1.5 at start, 2.5 at end" in heading
    assert 'Settings: rows=100000, quick=True, phases=[["1 bulk load", 0, 100000]].' in text
    assert "Baseline: one Parquet file per commit." in text
    assert text.endswith("- target met: yes\n")


def test_markdown_escapes_a_pipe_in_a_figure_name() -> None:
    text = markdown(_run(figures=[Figure("a | b", 1.0)]))
    assert "| a \\| b | - | 1 | - |" in text


@pytest.mark.parametrize(
    ("value", "unit", "text"),
    [
        (None, "s", "-"),
        (0.0, "s", "0 s"),
        (0.0001234, "", "1.23e-04"),
        (0.12345, "s", "0.123 s"),
        (12345.6, "", "12,346"),
        (7, "files", "7 files"),
        (1.5, "x", "1.5x"),
    ],
)
def test_numbers_keep_three_significant_digits_and_their_unit(value: float | None, unit: str, text: str) -> None:
    assert format_number(value, unit) == text


def test_a_run_written_and_read_back_is_equal(tmp_path: Path) -> None:
    run = _run()
    path = write_run(run, tmp_path / "run.json")
    assert read_run(path) == run
    stored = json.loads(path.read_text())
    assert stored["format"] == "mixed-iceberg-bench/1"
    assert stored["detail"]["commit_ms"] == [1.5, 2.5]


def test_result_path_is_bench_date_short_commit_and_never_overwrites(tmp_path: Path) -> None:
    run = _run()
    first = write_run(run, result_path(run, tmp_path))
    second = write_run(run, result_path(run, tmp_path))
    assert first.name == "format_core-2026-12-01-0123456.json"
    assert second.name == "format_core-2026-12-01-0123456-2.json"
    assert result_path(run).parent == RESULTS_DIR == ROOT / "bench" / "results"


def test_a_file_from_before_the_harness_is_refused_by_name(tmp_path: Path) -> None:
    legacy = tmp_path / "read-memory-2026-12-01.json"
    legacy.write_text(json.dumps({"bench": "read_memory", "rows": 5}))
    with pytest.raises(ValueError, match=r"read-memory-2026-12-01\.json: expected a result of format"):
        read_run(legacy)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"figures": [Figure("x", 1.0), Figure("x", 2.0)]}, "one figure per name"),
        ({"bench": "Format Core"}, "benchmark name"),
        ({"detail": {"read_s": float("nan")}}, "plain JSON"),
        ({"config": {"path": Path("/tmp")}}, "plain JSON"),
    ],
)
def test_a_run_refuses_what_would_not_round_trip(changes: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        _run(**changes)


@pytest.mark.parametrize("value", [float("inf"), float("nan"), True, "1.5"])
def test_a_figure_is_a_finite_number_or_none(value: object) -> None:
    with pytest.raises((TypeError, ValueError)):
        Figure("x", value)  # type: ignore[arg-type]


def _git(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True, check=False)


def test_environment_names_the_checked_out_commit() -> None:
    env = capture_environment()
    assert env.commit is not None
    assert re.fullmatch(r"[0-9a-f]{40}", env.commit)
    # HEAD itself, or an ancestor of it if someone committed since: a commit of this checkout.
    assert _git("rev-parse", "--verify", f"{env.commit}^{{commit}}").stdout.strip() == env.commit
    assert _git("merge-base", "--is-ancestor", env.commit, "HEAD").returncode == 0
    assert env.short_commit == env.commit[:7]
    assert isinstance(env.dirty, bool)
    assert env.cpus
    assert env.pyarrow
    assert env.load_average_end is None
    assert env.finished().load_average_end is not None


def test_environment_outside_a_checkout_has_no_commit(tmp_path: Path) -> None:
    env = capture_environment(tmp_path)
    assert (env.commit, env.dirty, env.short_commit) == (None, None, "nogit")
