"""The soak's catch-up phase: one minor run over a whole backlog, beside pyarrow (see optimizing_soak.py)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq

from bench.format_core import SCHEMA, Oracle, check
from bench.harness import Clock

if TYPE_CHECKING:
    from mixed_iceberg.table import MixedTable


def catch_up(table: MixedTable, oracle: Oracle, workdir: Path) -> dict[str, Any]:
    """One forced minor run that merges the whole backlog of the optimizing-off table.

    This is the minor data path at scale (the per-commit runs above are dominated by fixed
    costs: planning and commit). The baseline, in the same process right after: pyarrow reads
    the same live files (base + change) and writes the merged rows as one Parquet file with
    pyiceberg's default codec (zstd): the physical cost of a rewrite on this machine.
    """
    files = [
        *table.base_store.inspect.files().column("file_path").to_pylist(),
        *(table.change_store.inspect.files().column("file_path").to_pylist() if table.change_store is not None else []),
    ]
    clock = Clock.start()
    result = table.optimizing.run("minor")
    minor = clock.elapsed()
    got = table.scan().to_arrow()
    check("catch-up", got, oracle)
    local = [f.removeprefix("file://") for f in files]
    clock = Clock.start()
    rows = pa.concat_tables([pq.read_table(f).select(SCHEMA.names) for f in local], promote_options="permissive")
    pq.write_table(got, workdir / "baseline.parquet", compression="zstd")
    baseline = clock.elapsed()
    return {
        "files": len(files),
        "rows_in": result.rows_in,
        "rows_out": result.rows_out,
        "wall_s": minor.wall_s,
        "cpu_s": minor.cpu_s,
        "rows_per_s": result.rows_in / minor.wall_s if minor.wall_s else None,
        "rows_per_cpu_s": result.rows_in / minor.cpu_s if minor.cpu_s else None,
        "baseline_rows_in": rows.num_rows,
        "baseline_wall_s": baseline.wall_s,
        "baseline_cpu_s": baseline.cpu_s,
        "baseline_rows_per_cpu_s": rows.num_rows / baseline.cpu_s if baseline.cpu_s else None,
    }
