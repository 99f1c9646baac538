"""docs/rest.md's client configurations are the ones the REST client tests run.

The Spark properties and the DuckDB statements of the "Clients" section are built by the same
helpers that tests/integration/test_rest_spark.py and test_rest_duckdb.py use against a live
``serve``, so the page cannot drift from what is tested.
"""

from __future__ import annotations

import re

from tests.support.duckdb_iceberg import attach_rest
from tests.support.services import ROOT
from tests.support.spark import ICEBERG_CATALOG, ICEBERG_EXTENSIONS, rest_catalog

PAGE = (ROOT / "docs" / "rest.md").read_text()
URI = "http://127.0.0.1:8181"


def _block(language: str) -> list[str]:
    blocks = re.findall(rf"^```{language}\n(.*?)^```", PAGE, flags=re.DOTALL | re.MULTILINE)
    assert len(blocks) == 1, f"expected one {language} block in docs/rest.md, found {len(blocks)}"
    return [line for line in blocks[0].splitlines() if line and not line.startswith("#")]


def test_the_spark_properties_of_the_docs_are_the_tested_rest_catalog() -> None:
    documented = dict(line.split("=", 1) for line in _block("properties"))
    prefix = "spark.sql.catalog.lake"
    expected = {f"{prefix}.{key}": value for key, value in rest_catalog(URI, "local").items()}
    expected[prefix] = ICEBERG_CATALOG
    expected["spark.sql.extensions"] = ICEBERG_EXTENSIONS
    assert documented == expected


def test_the_duckdb_statements_of_the_docs_are_the_tested_attach() -> None:
    assert _block("sql")[:2] == attach_rest(URI, "local", client=("<client-id>", "<secret>"))
    with_token = attach_rest(URI, "local", token="<bearer token>")[0]
    assert f"`{with_token}`" in PAGE
