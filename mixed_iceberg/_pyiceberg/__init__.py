"""Everything mixed-iceberg needs from pyiceberg beyond its public API, in one package.

pyiceberg 0.12 lacks a delete-manifest writer, a row-delta producer, rewrite-manifests, open
statistics blob types and metadata updates without deep copies (``docs/pyiceberg.md`` lists
each with its upstream issue). What fills those gaps subclasses or reaches into pyiceberg's
private names, and all of it lives here, so a pyiceberg release has one package to check:

* :mod:`.patches`: behaviour changes to pyiceberg (blob types, Avro memoising, manifest-list
  cache, full-precision doubles), applied by :func:`apply_patches` when our catalog is
  created, not on import (another pyiceberg user in the process is left alone until then);
  :mod:`.nested_nulls` likewise (null lists and maps of structs read as null, not empty);
* :mod:`.row_delta`: snapshots that add and remove data and delete files, delete manifests;
* :mod:`.rewrite_manifests`: one REPLACE snapshot with merged manifests;
* :mod:`.transaction`: a transaction that re-checks before a retry, merge-append staging;
* :mod:`.sql_catalog`: the SQL catalog that parses each metadata file once;
* :mod:`.scan`: the manifest, partition and metrics evaluators of a scan plan;
* :mod:`.parquet`: pyiceberg's Parquet writer options; :mod:`.schemas`: Arrow to Iceberg schemas;
* :mod:`.arrow_filters`: row filters as pyarrow expressions, uuid comparisons included.

No module outside this package imports an underscored pyiceberg name
(``tests/unit/core/test_pyiceberg_seam.py`` checks). Importing it checks the pyiceberg version.
"""

from __future__ import annotations

import pyiceberg

__all__ = ["SUPPORTED_VERSIONS", "UnsupportedPyicebergError", "apply_patches", "check_version"]

#: pyiceberg releases whose private API this package was written and tested against (prefixes).
SUPPORTED_VERSIONS = ("0.12.",)


class UnsupportedPyicebergError(ImportError):
    """The installed pyiceberg is not one this package's internals were written for."""


def check_version(version: str) -> None:
    """Raise :class:`UnsupportedPyicebergError` unless ``version`` is a supported pyiceberg."""
    if not version.startswith(SUPPORTED_VERSIONS):
        raise UnsupportedPyicebergError(
            f"mixed-iceberg needs pyiceberg {' or '.join(v + 'x' for v in SUPPORTED_VERSIONS)}, found {version}: it "
            f"extends pyiceberg's private API (see docs/pyiceberg.md); install a supported one, "
            f"e.g. pip install 'pyiceberg[sql-sqlite,pyarrow]==0.12.*'"
        )


check_version(pyiceberg.__version__)


def apply_patches() -> None:
    """Apply :mod:`.patches` and :mod:`.nested_nulls` to pyiceberg in this process (idempotent)."""
    from mixed_iceberg._pyiceberg import nested_nulls, patches

    patches.apply()
    nested_nulls.apply()
