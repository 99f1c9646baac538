"""The peers benchmark's workload, its oracle and the checksum every answer is judged by.

Imported by the orchestrator (which writes the workload once) and by every runner (which reads
it), in environments with different pyarrow versions: it needs only numpy and pyarrow.

Layout of a workload folder (written once by :func:`write_workload`)::

    manifest.json            phases, batch files, queries and the expected checksums
    base.parquet             the bulk load
    upserts/NNNN.parquet     one upsert batch per commit (plain rows: the peers' input)
    changes/NNNN.parquet     the same batch as a change stream for mixed-iceberg:
                             -U (old values) / +U pairs for updates, +I for inserts
    state/<phase>.parquet    the oracle's state after each phase (the pyarrow reference reads it)
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

ACTION = "_change_action"
SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("k", pa.int32()),
        pa.field("v", pa.float64()),
        pa.field("s", pa.string()),
        pa.field("ts", pa.timestamp("us", tz="UTC")),
    ]
)
VALUE_FILTER_K = 10  # value-filter read: k < 10, about 1% of the rows
_TS_ORIGIN_US = 1_700_000_000_000_000
_TS_SPAN_US = 365 * 24 * 3600 * 1_000_000


@dataclass(frozen=True, slots=True)
class Shape:
    """How big each phase is."""

    rows: int
    big: tuple[int, int]  # commits, upserts per commit
    small: tuple[int, int]
    stream: tuple[int, int]
    read_every: int  # full merged read every N streaming commits (for the plot)

    @classmethod
    def full(cls) -> Shape:
        return cls(1_000_000, (5, 100_000), (20, 5_000), (200, 5_000), 10)

    @classmethod
    def quick(cls) -> Shape:
        return cls(100_000, (3, 10_000), (10, 1_000), (40, 1_000), 4)


@dataclass(frozen=True, slots=True)
class Checksum:
    """Order-independent fingerprint; integer sums wrap mod 2^64 alike on every side."""

    rows: int
    distinct_ids: int
    id_sum: int
    id_times_k: int
    v_cents: int
    ts_us: int
    s_bytes: int

    @classmethod
    def of(cls, table: Any) -> Checksum:
        table = table if isinstance(table, pa.Table) else pa.table(table)
        if table.num_rows == 0:
            return cls(0, 0, 0, 0, 0, 0, 0)
        ids = table.column("id").to_numpy().astype(np.int64)
        k = pc.cast(table.column("k"), pa.int64()).fill_null(0).to_numpy()
        # v holds whole cents, so the sum of cents is exact in any order.
        cents = np.rint(table.column("v").fill_null(0).to_numpy() * 100).astype(np.int64)
        ts_col = table.column("ts")
        if ts_col.type.tz is None:  # a peer that drops the zone still stores UTC instants
            ts_col = pc.cast(ts_col, pa.timestamp(ts_col.type.unit, tz="UTC"))
        ts = pc.cast(pc.cast(ts_col, pa.timestamp("us", tz="UTC")), pa.int64()).fill_null(0).to_numpy()
        s = pc.cast(table.column("s"), pa.large_string())
        with np.errstate(over="ignore"):
            return cls(
                rows=table.num_rows,
                distinct_ids=len(np.unique(ids)),
                id_sum=int(ids.sum(dtype=np.int64)),
                id_times_k=int((ids * k).sum(dtype=np.int64)),
                v_cents=int(cents.sum(dtype=np.int64)),
                ts_us=int(ts.sum(dtype=np.int64)),
                s_bytes=int(pc.sum(pc.binary_length(s)).as_py() or 0),
            )

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


def make_rows(rng: np.random.Generator, ids: np.ndarray, version: int) -> pa.Table:
    n = len(ids)
    k = rng.integers(0, 1000, n, dtype=np.int32)
    v = rng.integers(0, 10_000_000, n, dtype=np.int64) / 100.0
    s = pc.binary_join_element_wise(f"user-v{version}-", pc.cast(pa.array(ids), pa.string()), "")
    ts = pa.array(_TS_ORIGIN_US + rng.integers(0, _TS_SPAN_US, n, dtype=np.int64), pa.int64()).cast(SCHEMA.field("ts").type)
    return pa.Table.from_arrays([pa.array(ids, pa.int64()), pa.array(k), pa.array(v), s, ts], schema=SCHEMA)


def _with_action(rows: pa.Table, action: str) -> pa.Table:
    return rows.append_column(ACTION, pa.array([action] * rows.num_rows, pa.string()))


def key_range(rows: int) -> tuple[int, int]:
    """A point-ish key range: 1,000 keys (100 in --quick) in the middle of the loaded ids."""
    width = max(10, rows // 1000)
    return rows // 2, rows // 2 + width


def queries(state: pa.Table, rows: int) -> dict[str, Checksum]:
    lo, hi = key_range(rows)
    ids = state.column("id")
    return {
        "full": Checksum.of(state),
        "key_range": Checksum.of(state.filter(pc.and_(pc.greater_equal(ids, lo), pc.less(ids, hi)))),
        "value_filter": Checksum.of(state.filter(pc.less(state.column("k"), VALUE_FILTER_K))),
    }


def write_workload(folder: Path, shape: Shape, seed: int) -> dict[str, Any]:
    """Generate every batch once (numpy ``seed``), write the files and the manifest, return it."""
    rng = np.random.default_rng(seed)
    for sub in ("upserts", "changes", "state"):
        (folder / sub).mkdir(parents=True, exist_ok=True)
    state = make_rows(rng, np.arange(shape.rows, dtype=np.int64), 0)
    pq.write_table(state, folder / "base.parquet", compression="zstd")
    next_id = shape.rows
    manifest: dict[str, Any] = {
        "seed": seed,
        "shape": asdict(shape),
        "key_range": list(key_range(shape.rows)),
        "value_filter_k": VALUE_FILTER_K,
        "phases": [{"name": "load", "batches": ["base.parquet"], "upserts": shape.rows}],
        "expected": {},
        "stream_expected": {},
    }
    pq.write_table(state, folder / "state" / "load.parquet", compression="zstd")
    manifest["expected"]["load"] = {q: c.as_dict() for q, c in queries(state, shape.rows).items()}
    n = 0
    for name, (commits, upserts) in (("big", shape.big), ("small", shape.small), ("stream", shape.stream)):
        batches = []
        for i in range(commits):
            n += 1
            n_update = upserts // 2
            n_insert = upserts - n_update
            updated = np.sort(rng.choice(next_id, size=n_update, replace=False)).astype(np.int64)
            new_ids = np.arange(next_id, next_id + n_insert, dtype=np.int64)
            next_id += n_insert
            hit = pc.is_in(state.column("id"), value_set=pa.array(updated))
            before = state.filter(hit).sort_by("id")
            after = make_rows(rng, updated, n)
            inserted = make_rows(rng, new_ids, n)
            upsert = pa.concat_tables([after, inserted])
            pairs = pa.concat_tables([_with_action(before, "-U"), _with_action(after, "+U")])
            order = np.empty(2 * n_update, dtype=np.int64)
            order[0::2] = np.arange(n_update)
            order[1::2] = np.arange(n_update) + n_update
            changes = pa.concat_tables([pairs.take(pa.array(order)), _with_action(inserted, "+I")])
            rel = f"{n:04d}.parquet"
            pq.write_table(upsert, folder / "upserts" / rel, compression="zstd")
            pq.write_table(changes, folder / "changes" / rel, compression="zstd")
            batches.append(rel)
            state = pa.concat_tables([state.filter(pc.invert(hit)), upsert]).combine_chunks()
            if name == "stream" and ((i + 1) % shape.read_every == 0 or i + 1 == commits):
                manifest["stream_expected"][str(i + 1)] = Checksum.of(state).as_dict()
        manifest["phases"].append({"name": name, "batches": batches, "upserts": commits * upserts})
        pq.write_table(state, folder / "state" / f"{name}.parquet", compression="zstd")
        manifest["expected"][name] = {q: c.as_dict() for q, c in queries(state, shape.rows).items()}
    # The logical input, as pyarrow writes it: the denominator of write amplification.
    manifest["input_parquet_bytes"] = (folder / "base.parquet").stat().st_size + sum(
        p.stat().st_size for p in (folder / "upserts").glob("*.parquet")
    )
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=1))
    return manifest
