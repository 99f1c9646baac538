"""Streaming CDC ingestion (PyFlink): ``python jobs/ingest_cdc.py --config conf/ingest.yaml``.

Also runs as ``flink run -py jobs/ingest_cdc.py --config conf/ingest.yaml``. The pipeline is
built by :mod:`mixed_iceberg.ingest.job`; this file only makes the package importable.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mixed_iceberg.ingest.job import main

if __name__ == "__main__":
    sys.exit(main())
