"""The Python blocks of docs/ pages run as written (each page's blocks in order, in one namespace); every page
with a python block is listed (test_every_page_with_python_is_run)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[3] / "docs"
PAGES = ["catalogs.md", "debezium.md", "optimizer.md", "optimizing.md", "reading.md", "schema-evolution.md", "semantics.md"]


@pytest.mark.parametrize("page", PAGES)
def test_docs_python_blocks_run(page: str) -> None:
    text = (DOCS / page).read_text()
    blocks = re.findall(r"^```python\n(.*?)^```", text, flags=re.DOTALL | re.MULTILINE)
    assert blocks, f"{page} has no python block"
    namespace: dict[str, object] = {}
    for number, block in enumerate(blocks, start=1):
        exec(compile(block, f"{page}: python block {number}", "exec"), namespace)


def test_every_page_with_python_is_run() -> None:
    with_python = sorted(p.name for p in DOCS.glob("*.md") if "```python" in p.read_text())
    assert with_python == sorted(PAGES)
