"""Packages import down their ranks: the layers contract in ``.importlinter`` holds.

import-linter checks every import (at module level, under ``TYPE_CHECKING`` and inside
functions) of every module against the ranks; an import that points up fails here, with the
chain that does it. ``docs/architecture.md`` draws the same ranks (checked below).
"""

from __future__ import annotations

import configparser
import re
import subprocess
import sys

from tests.support.services import ROOT

CONFIG = ROOT / ".importlinter"
#: In a process of its own: import-linter's command configures logging (``dictConfig``, which
#: disables the loggers that exist), and later tests read our loggers' records.
_LINT = "import sys; from importlinter.cli import lint_imports; sys.exit(lint_imports(config_filename=sys.argv[1], no_cache=True, no_logo=True))"


def _ranks() -> list[str]:
    parser = configparser.ConfigParser()
    parser.read(CONFIG, encoding="utf-8")
    return [line.strip() for line in parser["importlinter:contract:layers"]["layers"].splitlines() if line.strip()]


def test_no_import_points_up_the_layers() -> None:
    done = subprocess.run([sys.executable, "-c", _LINT, str(CONFIG)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"an import points up the layers:\n{done.stdout}{done.stderr}"


def test_the_contract_ranks_every_package() -> None:
    """A new package or root module gets a rank (else the contract would not see it)."""
    ranked = {re.sub(r"[()]", "", name).strip() for rank in _ranks() for name in rank.split(":")}
    present = {p.stem for p in (ROOT / "mixed_iceberg").glob("*.py") if p.stem != "__init__"}
    present |= {p.parent.name for p in (ROOT / "mixed_iceberg").glob("*/__init__.py")}
    assert present <= ranked, f"expected a rank in .importlinter for {sorted(present - ranked)}"


def test_docs_draw_the_same_ranks() -> None:
    """docs/architecture.md lists the packages in the contract's order."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    block = text.split("```", 2)[1]
    positions = []
    for rank in _ranks():
        first = re.sub(r"[()]", "", rank.split(":")[0]).strip()
        found = re.search(rf"mixed_iceberg/{re.escape(first)}(/|\.py)", block)
        if found is not None:
            positions.append((found.start(), first))
    assert positions == sorted(positions), f"expected docs/architecture.md's layer list in the order {[p for _, p in positions]}"
