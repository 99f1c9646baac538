"""The optional extras the core library must do without, and the modules that need them at import.

The core install (``pip install mixed-iceberg``, no ``flink``/``kafka`` extra) must import every
module but these. ``scripts/test.sh`` runs the unit tests in a venv without the extras
(``.venv-core``); ``tests/unit/core/test_optional_extras.py`` pins this table in every venv by
importing each module with the packages blocked.
"""

from __future__ import annotations

import importlib.util

import pytest

#: Top-level import name -> the extra of pyproject.toml that installs it.
EXTRA_PACKAGES = {"pyflink": "flink", "confluent_kafka": "kafka"}

#: Module -> the extras' packages it cannot be imported without. The backends import them at
#: module level by design; the ingest job's client and runtime import the Kafka backend at module
#: level (they cannot run without Kafka anyway).
NEEDS_AT_IMPORT: dict[str, frozenset[str]] = {
    # The Flink sink and source are the Flink backend of the package; the sink runs the ingest job
    # beside the user's. _pyflink is the seam over PyFlink's internals.
    "mixed_iceberg._pyflink": frozenset({"pyflink"}),
    "mixed_iceberg.flink": frozenset({"pyflink", "confluent_kafka"}),
    "mixed_iceberg.ingest.flink": frozenset({"pyflink"}),
    "mixed_iceberg.ingest.job": frozenset({"confluent_kafka"}),
    "mixed_iceberg.ingest.monitor": frozenset({"confluent_kafka"}),
    "mixed_iceberg.ingest.runtime": frozenset({"confluent_kafka"}),
    "mixed_iceberg.logstore.kafka": frozenset({"confluent_kafka"}),
    "mixed_iceberg.optimizer.flink": frozenset({"pyflink"}),
}


def installed(package: str) -> bool:
    """Whether ``package`` (a top-level import name) can be imported here."""
    return importlib.util.find_spec(package) is not None


def skip_unless_importable(module: str) -> None:
    """Skip the calling test when ``module`` needs an extra that is not installed."""
    missing = sorted(p for p in NEEDS_AT_IMPORT.get(module, ()) if not installed(p))
    if missing:
        extras = ", ".join(EXTRA_PACKAGES[p] for p in missing)
        pytest.skip(f"{module} needs the {extras} extra ({', '.join(missing)} is not installed)")
