"""Every example in the package's docstrings runs (those marked ``+SKIP`` need a live table).

The same as ``pytest --doctest-modules mixed_iceberg``, kept inside the suite's test paths:
an example that stops matching the code fails here, per module.
"""

from __future__ import annotations

import doctest
import importlib
import pkgutil
import warnings

import pytest

import mixed_iceberg
from tests.support.extras import skip_unless_importable

with warnings.catch_warnings():
    # The walk imports each package: mixed_iceberg.flink imports pyflink, which warns about its own.
    warnings.simplefilter("ignore", DeprecationWarning)
    MODULES = sorted(m.name for m in pkgutil.walk_packages(mixed_iceberg.__path__, "mixed_iceberg."))


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name: str) -> None:
    skip_unless_importable(name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # pyflink's own, on import of ingest.flink
        module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, report=False)
    assert result.failed == 0, f"{name}: {result.failed} of {result.attempted} docstring examples failed (run doctest -v)"


def test_the_examples_are_found() -> None:
    """The walk sees the package (an empty parametrization would pass silently)."""
    assert {"mixed_iceberg.format.filenames", "mixed_iceberg.caching", "mixed_iceberg._pyiceberg.row_delta"} <= set(MODULES)
    module = importlib.import_module("mixed_iceberg.format.filenames")
    assert doctest.testmod(module, report=False).attempted >= 2
