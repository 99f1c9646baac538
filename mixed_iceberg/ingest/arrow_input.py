"""Hand the ingest function its input batches as Arrow arrays instead of pandas Series.

PyFlink (2.2) decodes every Arrow batch a pandas function receives and converts its columns to
pandas (``pyflink.table.utils.arrow_to_pandas``, called by name from the Arrow coders). For the
message column (``BYTES``) that makes one Python ``bytes`` object per record, which
:class:`~mixed_iceberg.ingest.flink.IngestFunction` turns straight back into an Arrow array: on
small messages a measurable share of the worker's CPU per record (``python -m bench.ingest``), and
a heap of short-lived objects per batch.

:func:`install` swaps that name in the coder modules, in the Python worker, for a function that
returns the decoded batch's columns as they are, but only for a batch shaped like the ingest
function's input (``INT, BIGINT, BYTES``, no time zones to apply); every other batch still goes
through PyFlink's conversion. When the modules do not hold the name (another PyFlink), nothing is
swapped and the function keeps receiving pandas Series: it accepts either.
"""

from __future__ import annotations

import importlib
import logging
import threading
from collections.abc import Callable, Sequence
from typing import Any

import pyarrow as pa

__all__ = ["INPUT_TYPES", "arrow_columns", "install"]

log = logging.getLogger(__name__)

#: PyFlink's type names of the ingest function's arguments: partition, offset, message.
INPUT_TYPES = ("IntType", "BigIntType", "VarBinaryType")
#: The coder modules that call ``arrow_to_pandas`` by name (Cython and pure-Python builds).
_CODERS = ("pyflink.fn_execution.coder_impl_fast", "pyflink.fn_execution.coder_impl_slow")
_NAME = "arrow_to_pandas"
_lock = threading.Lock()


def arrow_columns(convert: Callable[..., list[Any]]) -> Callable[..., list[Any]]:
    """``convert`` (PyFlink's ``arrow_to_pandas``), except that a batch of the ingest function's
    input types comes back as its Arrow columns."""

    def columns(timezone: Any, field_types: Sequence[Any], batches: list[pa.RecordBatch]) -> list[Any]:
        if len(batches) == 1 and tuple(type(t).__name__ for t in field_types) == INPUT_TYPES:
            return list(batches[0].columns)
        return convert(timezone, field_types, batches)

    columns.__wrapped__ = convert  # type: ignore[attr-defined]
    return columns


def install() -> bool:
    """Swap the conversion in PyFlink's coder modules (idempotent); whether the fast path is on."""
    with _lock:
        found = False
        for name in _CODERS:
            try:
                module = importlib.import_module(name)
            except ImportError:  # the Cython build is optional
                continue
            current = getattr(module, _NAME, None)
            if current is None:
                continue
            found = True
            if getattr(current, "__wrapped__", None) is None:
                setattr(module, _NAME, arrow_columns(current))
        if not found:
            log.warning("PyFlink's coders have no %s: the ingest function receives pandas Series", _NAME)
        return found
