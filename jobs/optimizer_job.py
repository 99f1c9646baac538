"""The optimizer (PyFlink): ``python jobs/optimizer_job.py --config conf/optimizer.yaml --group default``.

Also runs as ``flink run -py jobs/optimizer_job.py --config conf/optimizer.yaml --group default``.
One job serves one optimizer group; its ``--parallelism`` is the group's capacity. The job is
built by :mod:`mixed_iceberg.optimizer.job`; this file only makes the package importable.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mixed_iceberg.optimizer.job import main

if __name__ == "__main__":
    sys.exit(main())
