"""The CDC parser's fuzz target in the suite: the corpus replayed, then a short fuzz run.

In a child process (``scripts/fuzz_parser.py``): a segfault in the JSON reader would kill the
test run itself. atheris where it is installed (coverage-guided); hypothesis over the same
target always, so the suite fuzzes where atheris cannot be installed too.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest

from tests.support.services import ROOT

SCRIPT = ROOT / "scripts" / "fuzz_parser.py"
HAS_ATHERIS = importlib.util.find_spec("atheris") is not None


def _run(*args: str, timeout: float = 240) -> str:
    run = subprocess.run([sys.executable, str(SCRIPT), *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    output = run.stdout + run.stderr
    assert run.returncode == 0, f"fuzz run failed (exit {run.returncode}):\n{output[-6000:]}"
    return output


@pytest.mark.parametrize(
    ("engine", "seconds"),
    [
        pytest.param("atheris", 16, marks=pytest.mark.skipif(not HAS_ATHERIS, reason="atheris not installed (hypothesis runs)")),
        pytest.param("hypothesis", 8),
    ],
)
def test_parser_survives_the_corpus_and_a_fuzz_run(engine: str, seconds: int) -> None:
    output = _run("--engine", engine, "--seconds", str(seconds))
    assert "replayed" in output
    assert f"fuzzing with {engine}" in output
