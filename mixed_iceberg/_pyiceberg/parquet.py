"""pyiceberg 0.12's Parquet writer options from table properties (its private ``_get_parquet_writer_kwargs``).

The compression codec and level, page and dictionary sizes and row-group limits pyiceberg's own
writer takes from ``write.parquet.*``; our data-file writer uses the same, so files written by
either are alike.
"""

from __future__ import annotations

from typing import Any

from pyiceberg.io.pyarrow import _get_parquet_writer_kwargs
from pyiceberg.typedef import Properties

__all__ = ["parquet_writer_kwargs"]


def parquet_writer_kwargs(properties: Properties) -> dict[str, Any]:
    """``pyarrow.parquet.ParquetWriter`` keyword arguments for a table with ``properties``."""
    kwargs: dict[str, Any] = _get_parquet_writer_kwargs(properties)
    return kwargs
