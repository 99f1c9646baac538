"""Iceberg's manifest-merge properties are read through the option registry on every commit:
a zero or bad value set by another engine is a clear PropertyError, never a silent default."""

from __future__ import annotations

from pathlib import Path

import pytest

from mixed_iceberg.exceptions import PropertyError
from tests.support.tables import ORDERS_SCHEMA, changes, local_catalog


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("commit.manifest.min-count-to-merge", "0"),
        ("commit.manifest.target-size-bytes", "0"),
        ("commit.manifest-merge.enabled", "maybe"),
    ],
)
def test_a_bad_manifest_property_set_by_another_engine_is_a_property_error(tmp_path: Path, key: str, value: str) -> None:
    table = local_catalog(tmp_path).create_table("db.t", ORDERS_SCHEMA, primary_key=["id"])
    with table.new_transaction(("w", 1)) as txn:
        txn.write(changes([("+I", 1, "a", 1, 1.0)]))
    # Another engine writes the property straight into the BaseStore, past our validation.
    with table.base_store.transaction() as raw:
        raw.set_properties({key: value})
    with pytest.raises(PropertyError, match=key.replace(".", r"\.")):
        table.refresh().optimizing.run("full")
