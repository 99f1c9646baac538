"""catalogs.yaml, optimizer.yaml and ingest.yaml are read by one reader and fail in one shape:
a ConfigError naming the file, the key, the value found and what was expected."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from mixed_iceberg.catalog.config import load_catalog_config
from mixed_iceberg.exceptions import ConfigError
from mixed_iceberg.ingest.config import load_ingest_config
from mixed_iceberg.optimizer.config import load_optimizer_config
from tests.support.services import ROOT


def _catalogs(path: Path) -> object:
    return load_catalog_config("local", path)


def _optimizer(path: Path) -> object:
    return load_optimizer_config(path)


def _ingest(path: Path) -> object:
    return load_ingest_config(path)


LOADERS: dict[str, Callable[[Path], object]] = {"catalogs": _catalogs, "optimizer": _optimizer, "ingest": _ingest}


@pytest.mark.parametrize("loader", LOADERS, ids=list(LOADERS))
@pytest.mark.parametrize(
    ("text", "says"),
    [("key: [unclosed\n", "not valid YAML"), ("- a list\n", "expected a mapping, found list")],
    ids=["malformed", "not-a-mapping"],
)
def test_every_file_refuses_a_malformed_document_alike(tmp_path: Path, loader: str, text: str, says: str) -> None:
    path = tmp_path / f"{loader}.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=says) as info:
        LOADERS[loader](path)
    assert info.value.file == str(path)
    assert str(path) in str(info.value)


def _bad_catalogs(tmp_path: Path) -> Path:
    path = tmp_path / "catalogs.yaml"
    path.write_text(
        "catalogs:\n  - name: local\n    storage: {type: gcs}\n    properties: {uri: 'sqlite:///x.db', warehouse: w}\n"
    )
    return path


def _bad_optimizer(tmp_path: Path) -> Path:
    path = tmp_path / "optimizer.yaml"
    path.write_text("optimizer_groups:\n  - name: g\n    properties: {refresh-interval: soon}\n")
    return path


def _bad_ingest(tmp_path: Path) -> Path:
    path = tmp_path / "ingest.yaml"
    path.write_text((ROOT / "conf" / "ingest.yaml").read_text().replace("parallelism: 2", "parallelism: 0"))
    assert "parallelism: 0" in path.read_text()
    return path


@pytest.mark.parametrize(
    ("loader", "write", "key", "value"),
    [
        ("catalogs", _bad_catalogs, "catalogs.local.storage.type", "gcs"),
        ("optimizer", _bad_optimizer, "optimizer group 'g': property 'refresh-interval'", "soon"),
        ("ingest", _bad_ingest, "parallelism", "0"),
    ],
    ids=["catalogs", "optimizer", "ingest"],
)
def test_a_bad_value_names_the_file_the_key_the_value_and_the_expectation(
    tmp_path: Path, loader: str, write: Callable[[Path], Path], key: str, value: object
) -> None:
    path = write(tmp_path)
    with pytest.raises(ConfigError) as info:
        LOADERS[loader](path)
    error = info.value
    assert (error.file, error.key, error.value) == (str(path), key, value)
    assert error.expected
    assert str(path) in str(error)
    assert key in str(error)
