"""A real SQLite catalog named ``local`` in a tmp folder, found by the CLI through
``MIXED_ICEBERG_CATALOGS`` (``<tmp>/conf/catalogs.yaml``), and a runner of ``mixed-iceberg`` in-process."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from mixed_iceberg import MixedCatalog, load_catalog
from mixed_iceberg.cli.main import main


@dataclass(frozen=True)
class Run:
    """One ``mixed-iceberg`` run: its exit code and what it printed."""

    code: int
    out: str
    err: str

    @property
    def json(self) -> Any:
        return json.loads(self.out)


@pytest.fixture
def conf(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``<tmp>/conf/catalogs.yaml`` with the catalog ``local`` (and one with a secret), named by the environment."""
    folder = tmp_path / "conf"
    folder.mkdir()
    path = folder / "catalogs.yaml"
    path.write_text(
        "catalogs:\n"
        f"  - name: local\n    type: sql\n    properties:\n      uri: sqlite:///{tmp_path}/catalog.db\n      warehouse: {tmp_path}/wh\n"
        "  - name: s3\n    type: sql\n    storage:\n      type: s3\n      endpoint: http://127.0.0.1:1\n"
        "      access-key-id: admin\n      secret-access-key: hunter2\n"
        f"    properties:\n      uri: sqlite:///{tmp_path}/s3.db\n      warehouse: s3://bucket/wh\n"
    )
    monkeypatch.setenv("MIXED_ICEBERG_CATALOGS", str(path))
    monkeypatch.delenv("MIXED_ICEBERG_OPTIMIZER_CONFIG", raising=False)
    return path


@pytest.fixture
def catalog(conf: Path) -> MixedCatalog:
    return load_catalog("local")


@pytest.fixture
def cli(conf: Path, capsys: pytest.CaptureFixture[str]) -> Callable[..., Run]:
    """``cli("status", "db.t")`` runs ``mixed-iceberg status db.t`` in this process."""

    def run(*argv: str) -> Run:
        capsys.readouterr()
        code = main(list(argv))
        out, err = capsys.readouterr()
        return Run(code, out, err)

    return run
