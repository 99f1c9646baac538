"""Format-core benchmark: bulk load, ChangeStore upserts and merged reads, next to plain Parquet.

Run it with::

    .venv/bin/python -m bench.format_core            # 1M base rows, 5 x 100k and 20 x 5k upserts
    .venv/bin/python -m bench.format_core --quick    # 100k base rows, 2 x 10k and 5 x 1k upserts

Three phases run against one keyed Mixed-Iceberg table (SQLite catalog, local warehouse in a
temporary folder): (1) a bulk load into the BaseStore, (2) a few large upsert commits, (3) many
small upsert commits. An upsert batch is half updates of random existing keys (a ``-U`` row
immediately followed by its ``+U`` row) and half inserts of new keys (``+I``). After each phase
the merged read (``table.scan().to_arrow()``) is checked against an oracle, an Arrow table of
the expected state updated with vectorized filters, by row count and checksums, and then
exactly. A mismatch stops the run with a non-zero exit.

Side by side, in the same process and on the same batches, a naive reference gives the physical
limit of writing: one plain Parquet file per commit written by pyarrow (same codec as the
table's, zstd by default), and a read that loads every file and keeps the latest row per key
(group by key, max sequence, semi-join back). It is checked against the same oracle. The two
systems take turns going first on each commit, so load from elsewhere hits both alike.

Each read is timed ``--read-repeats`` times: the first (checked) read, with whatever is not yet
cached, and the best one. The harness prints the figures as a Markdown table (the naive
reference as the baseline) and writes the run to ``bench/results/format_core-<date>-<commit>.json``
(``--output`` elsewhere), with every commit's and read's seconds in its detail. Timings are
wall-clock (``time.perf_counter``); nothing is asserted on them.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from bench.harness import Figure, Run, capture_environment, publish, timed

ACTION = "_change_action"
SEQ = "__seq"
TABLE = "bench.orders"
WRITER = "bench"
SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("qty", pa.int32()),
        pa.field("price", pa.float64()),
        pa.field("name", pa.string()),
        pa.field("ts", pa.timestamp("us", tz="UTC")),
    ]
)
_TS_ORIGIN_US = 1_700_000_000_000_000  # 2023-11-14, so timestamps look like real ones
_TS_SPAN_US = 365 * 24 * 3600 * 1_000_000


class OracleMismatchError(AssertionError):
    """A read did not match the oracle: the benchmark's figures would be meaningless."""


# --------------------------------------------------------------------------- configuration


@dataclass(frozen=True, slots=True)
class Phase:
    """One phase: ``commits`` upsert commits of ``upserts`` each, or the bulk load (``commits`` 0)."""

    name: str
    commits: int
    upserts: int


def phases_for(rows: int, quick: bool) -> list[Phase]:
    """The three phases; ``--quick`` keeps the shape but shrinks the commit sizes and counts."""
    if quick:
        return [Phase("1 bulk load", 0, rows), Phase("2 large upserts", 2, rows // 10), Phase("3 small upserts", 5, rows // 100)]
    return [Phase("1 bulk load", 0, rows), Phase("2 large upserts", 5, rows // 10), Phase("3 small upserts", 20, rows // 200)]


# --------------------------------------------------------------------------- data and oracle


def make_rows(rng: np.random.Generator, ids: npt.NDArray[np.int64], version: int) -> pa.Table:
    """Fresh values for ``ids``; ``version`` goes into the name so every rewrite is visible."""
    n = len(ids)
    qty = rng.integers(0, 1000, n, dtype=np.int32)
    # Whole cents, so the price checksum (sum of cents) is exact whatever the summation order.
    price = rng.integers(0, 10_000_000, n, dtype=np.int64) / 100.0
    names = pc.binary_join_element_wise(f"item-v{version}-", pc.cast(pa.array(ids), pa.string()), "")
    ts = pa.array(_TS_ORIGIN_US + rng.integers(0, _TS_SPAN_US, n, dtype=np.int64), pa.int64()).cast(SCHEMA.field("ts").type)
    return pa.Table.from_arrays([pa.array(ids, pa.int64()), pa.array(qty), pa.array(price), names, ts], schema=SCHEMA)


def with_action(rows: pa.Table, action: str) -> pa.Table:
    # A one-entry dictionary decoded to strings: cheap, and no Python object per row.
    codes = pa.array(np.zeros(rows.num_rows, dtype=np.int8))
    return rows.append_column(ACTION, pa.DictionaryArray.from_arrays(codes, pa.array([action])).cast(pa.string()))


@dataclass(slots=True)
class Oracle:
    """The expected latest state, as an Arrow table; ids are handed out densely from 0."""

    state: pa.Table
    next_id: int

    def upsert_batch(self, rng: np.random.Generator, upserts: int, version: int) -> pa.Table:
        """A change batch (updates as -U/+U pairs, then inserts) and apply it to the state.

        Half the upserts update distinct random existing keys, half insert new keys.
        """
        n_update = upserts // 2
        n_insert = upserts - n_update
        updated = np.sort(rng.choice(self.next_id, size=n_update, replace=False)).astype(np.int64)
        new_ids = np.arange(self.next_id, self.next_id + n_insert, dtype=np.int64)
        self.next_id += n_insert
        hit = pc.is_in(self.state.column("id"), value_set=pa.array(updated))
        before = self.state.filter(hit).sort_by("id")  # same order as ``updated``
        if before.num_rows != n_update:
            raise OracleMismatchError(f"oracle: expected {n_update} existing rows to update, found {before.num_rows}")
        after = make_rows(rng, updated, version)
        inserted = make_rows(rng, new_ids, version)
        # -U then +U for each key: concatenate both halves, then take them alternately.
        pairs = pa.concat_tables([with_action(before, "-U"), with_action(after, "+U")])
        interleave = np.empty(2 * n_update, dtype=np.int64)
        interleave[0::2] = np.arange(n_update)
        interleave[1::2] = np.arange(n_update) + n_update
        batch = pa.concat_tables([pairs.take(pa.array(interleave)), with_action(inserted, "+I")]).combine_chunks()
        self.state = pa.concat_tables([self.state.filter(pc.invert(hit)), after, inserted]).combine_chunks()
        return batch


@dataclass(frozen=True, slots=True)
class Checksum:
    """Order-independent fingerprint of a table state; int sums wrap mod 2^64 on both sides alike."""

    rows: int
    distinct_ids: int
    id_times_qty: int
    price_cents: int
    ts_us: int
    name_bytes: int

    @classmethod
    def of(cls, table: pa.Table) -> Checksum:
        ids = table.column("id").to_numpy().astype(np.int64)
        qty = table.column("qty").fill_null(0).to_numpy().astype(np.int64)
        cents = np.rint(table.column("price").fill_null(0).to_numpy() * 100).astype(np.int64)
        ts = table.column("ts").cast(pa.int64()).fill_null(0).to_numpy()
        with np.errstate(over="ignore"):
            return cls(
                rows=table.num_rows,
                distinct_ids=len(pc.unique(table.column("id"))),
                id_times_qty=int((ids * qty).sum()),
                price_cents=int(cents.sum()),
                ts_us=int(ts.sum()),
                name_bytes=int(pc.sum(pc.binary_length(table.column("name"))).as_py() or 0),
            )


def check(label: str, got: pa.Table, oracle: Oracle) -> None:
    """Fail loudly unless ``got`` holds exactly the oracle's state (checksums, then every value)."""
    want_sum = Checksum.of(oracle.state)
    got_sum = Checksum.of(got)
    if got_sum != want_sum:
        diffs = {k: (v, getattr(got_sum, k)) for k, v in asdict(want_sum).items() if getattr(got_sum, k) != v}
        raise OracleMismatchError(f"{label}: merged read differs from the oracle; expected vs found: {diffs}")
    got_sorted = got.select(SCHEMA.names).cast(SCHEMA).sort_by("id")
    if not got_sorted.equals(oracle.state.sort_by("id")):
        raise OracleMismatchError(f"{label}: checksums match but some values differ from the oracle")


# --------------------------------------------------------------------------- the two systems


@dataclass(slots=True)
class PhaseFigures:
    """What one system did in one phase."""

    rows_written: int = 0
    commit_s: list[float] = field(default_factory=list)
    read_s: list[float] = field(default_factory=list)
    rows_read: int = 0
    files: dict[str, int] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        ms = [s * 1000 for s in self.commit_s]
        total = sum(self.commit_s)
        return {
            "rows_written": self.rows_written,
            "commits": len(ms),
            "write_s": total,
            "write_rows_per_s": self.rows_written / total if total else None,
            "commit_ms_median": statistics.median(ms) if ms else None,
            "commit_ms_p95": float(np.percentile(ms, 95)) if ms else None,
            "commit_ms": ms,
            "read_s": self.read_s[0] if self.read_s else None,
            "read_s_best": min(self.read_s) if self.read_s else None,
            "read_s_all": self.read_s,
            "rows_read": self.rows_read,
            "live_files": self.files,
        }


class MixedSystem:
    """The system under test: a keyed Mixed-Iceberg table."""

    name = "mixed"

    def __init__(self, warehouse: Path) -> None:
        # The catalog config reads the warehouse from the environment: set it before loading.
        os.environ["MIXED_ICEBERG_WAREHOUSE_DIR"] = str(warehouse)
        from mixed_iceberg import load_catalog

        self.table = load_catalog("local").create_table(TABLE, schema=SCHEMA, primary_key=["id"])

    def bulk_load(self, rows: pa.Table) -> None:
        self.table.bulk_load(rows)

    def commit(self, sequence: int, batch: pa.Table) -> None:
        with self.table.new_transaction((WRITER, sequence)) as txn:
            txn.write(batch)
        outcome = txn.outcome
        if outcome is None or outcome.skipped:
            raise OracleMismatchError(f"mixed: commit {sequence} did not land (outcome {outcome})")

    def read(self) -> pa.Table:
        return self.table.scan().to_arrow()

    def live_files(self) -> dict[str, int]:
        self.table.refresh()
        counts = {}
        for store_name, store in (("base", self.table.base_store), ("change", self.table.change_store)):
            counts[store_name] = 0 if store is None or store.current_snapshot() is None else len(store.inspect.files())
        return counts


class NaiveSystem:
    """The physical limit: one Parquet file per commit, latest row per key found at read time."""

    name = "naive"

    def __init__(self, folder: Path, codec: str) -> None:
        self.folder = folder
        self.folder.mkdir(parents=True)
        self.codec = codec
        self.paths: list[Path] = []

    def _write(self, rows: pa.Table) -> None:
        path = self.folder / f"{len(self.paths):06d}.parquet"
        pq.write_table(rows, path, compression=self.codec)
        self.paths.append(path)

    def bulk_load(self, rows: pa.Table) -> None:
        self._write(rows)

    def commit(self, sequence: int, batch: pa.Table) -> None:
        self._write(batch)

    def read(self) -> pa.Table:
        """Every file, a global sequence per row (file, row), then the newest non-delete row per key."""
        parts = []
        for index, path in enumerate(self.paths):
            part = pq.read_table(path)
            if ACTION not in part.column_names:  # the bulk-loaded file: all inserts
                part = with_action(part, "+I")
            seq = (np.int64(index) << 32) | np.arange(part.num_rows, dtype=np.int64)
            parts.append(part.append_column(SEQ, pa.array(seq)))
        rows = pa.concat_tables(parts)
        latest = rows.group_by("id", use_threads=True).aggregate([(SEQ, "max")])
        kept = rows.join(latest, keys=["id", SEQ], right_keys=["id", f"{SEQ}_max"], join_type="left semi", use_threads=True)
        # An update's -U and +U share a key; the +U comes later, so only a trailing -D removes a key.
        live = kept.filter(pc.is_in(kept.column(ACTION), value_set=pa.array(["+I", "+U"])))
        return live.select(SCHEMA.names)

    def live_files(self) -> dict[str, int]:
        return {"parquet": len(self.paths)}


System = MixedSystem | NaiveSystem


# --------------------------------------------------------------------------- the run


def turns(systems: list[System], index: int) -> list[System]:
    """``systems`` rotated by ``index``: who goes first alternates from one commit to the next."""
    shift = index % len(systems)
    return systems[shift:] + systems[:shift]


def run_phase(
    phase: Phase, systems: list[System], oracle: Oracle | None, rng: np.random.Generator, seq: Iterator[int], read_repeats: int
) -> tuple[Oracle, dict[str, PhaseFigures]]:
    figures = {system.name: PhaseFigures() for system in systems}
    if phase.commits == 0:
        rows = make_rows(rng, np.arange(phase.upserts, dtype=np.int64), 0)
        oracle = Oracle(rows, phase.upserts)
        for system in systems:
            _, timing = timed(partial(system.bulk_load, rows))
            figures[system.name].commit_s.append(timing.wall_s)
            figures[system.name].rows_written += rows.num_rows
    else:
        assert oracle is not None
        for index in range(phase.commits):
            sequence = next(seq)
            batch = oracle.upsert_batch(rng, phase.upserts, sequence)
            for system in turns(systems, index):
                _, timing = timed(partial(system.commit, sequence, batch))
                figures[system.name].commit_s.append(timing.wall_s)
                figures[system.name].rows_written += batch.num_rows
    for repeat in range(read_repeats):
        for system in turns(systems, repeat):
            result, timing = timed(system.read)
            if repeat == 0:
                check(f"{system.name} after phase {phase.name!r}", result, oracle)
                figures[system.name].rows_read = result.num_rows
            figures[system.name].read_s.append(timing.wall_s)
            del result
    for system in systems:
        figures[system.name].files = system.live_files()
    return oracle, figures


def phase_figures(name: str, mixed: PhaseFigures, naive: PhaseFigures) -> list[Figure]:
    """One phase's figures: the Mixed-Iceberg table's, beside the naive reference's."""
    m, n = mixed.summary(), naive.summary()
    base, change = m["live_files"].get("base", 0), m["live_files"].get("change", 0)
    return [
        Figure(f"{name}: write", m["write_rows_per_s"], "rows/s", n["write_rows_per_s"]),
        Figure(f"{name}: commit, median", m["commit_ms_median"], "ms", n["commit_ms_median"]),
        Figure(f"{name}: commit, p95", m["commit_ms_p95"], "ms", n["commit_ms_p95"]),
        Figure(f"{name}: merged read, first", m["read_s"], "s", n["read_s"]),
        Figure(f"{name}: merged read, best of {len(m['read_s_all'])}", m["read_s_best"], "s", n["read_s_best"]),
        Figure(f"{name}: rows read", m["rows_read"], "rows", n["rows_read"]),
        Figure(f"{name}: live files (BaseStore + ChangeStore)", base + change, "files", n["live_files"]["parquet"]),
        Figure(f"{name}: live ChangeStore files", change, "files"),
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=None, help="base rows (default 1,000,000, or 100,000 with --quick)")
    parser.add_argument("--quick", action="store_true", help="smoke run: 100k base rows, 2 x 10k and 5 x 1k upserts")
    parser.add_argument("--seed", type=int, default=20240601, help="numpy seed (default %(default)s)")
    parser.add_argument(
        "--output", type=Path, default=None, help="JSON results file (default bench/results/format_core-<date>-<commit>.json)"
    )
    parser.add_argument(
        "--read-repeats", type=int, default=3, help="merged reads per phase; the first is checked (default %(default)s)"
    )
    parser.add_argument(
        "--naive-codec", default="zstd", help="Parquet codec of the naive files (default %(default)s, pyiceberg's default)"
    )
    parser.add_argument("--keep", action="store_true", help="keep the temporary warehouse and Parquet folder")
    args = parser.parse_args(argv)
    rows = args.rows or (100_000 if args.quick else 1_000_000)
    phases = phases_for(rows, args.quick)

    environment = capture_environment()
    workdir = Path(tempfile.mkdtemp(prefix="mixed-iceberg-bench-"))
    rng = np.random.default_rng(args.seed)
    seq = iter(range(1, 1_000_000))
    config = {
        "rows": rows,
        "quick": args.quick,
        "seed": args.seed,
        "read_repeats": args.read_repeats,
        "naive_codec": args.naive_codec,
        "phases": [asdict(p) for p in phases],
    }
    figures: list[Figure] = []
    notes: list[str] = []
    details: list[dict[str, Any]] = []
    try:
        systems: list[System] = [MixedSystem(workdir / "warehouse"), NaiveSystem(workdir / "naive", args.naive_codec)]
        oracle: Oracle | None = None
        for phase in phases:
            print(
                f"phase {phase.name}: {phase.commits or 1} commit(s) of {phase.upserts:,} {'rows' if phase.commits == 0 else 'upserts'}",
                file=sys.stderr,
                flush=True,
            )
            (oracle, by_system), timing = timed(partial(run_phase, phase, systems, oracle, rng, seq, max(1, args.read_repeats)))
            rows_per_commit = by_system["mixed"].rows_written // max(1, phase.commits)
            figures += phase_figures(phase.name, by_system["mixed"], by_system["naive"])
            notes.append(f"{phase.name}: {phase.commits or 1} commit(s) x {rows_per_commit:,} rows")
            details.append(
                {
                    "name": phase.name,
                    "commits": phase.commits,
                    "upserts_per_commit": phase.upserts if phase.commits else None,
                    "rows_per_commit": rows_per_commit,
                    "expected_rows": oracle.state.num_rows,
                    "phase_wall_s": timing.wall_s,
                    **{name: fig.summary() for name, fig in by_system.items()},
                }
            )
            print(
                f"  ok: {oracle.state.num_rows:,} rows; mixed read {by_system['mixed'].read_s[0]:.2f}s, "
                f"naive read {by_system['naive'].read_s[0]:.2f}s",
                file=sys.stderr,
                flush=True,
            )
    finally:
        if args.keep:
            print(f"kept {workdir}", file=sys.stderr)
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    notes.append(
        "rows/s counts change rows (an update is two rows, -U and +U) over the summed commit seconds; "
        "value / baseline above 1 is faster for rows/s, slower for times"
    )
    run = Run(
        "format_core",
        environment.finished(),
        figures,
        baseline=f"naive: one plain Parquet file per commit ({args.naive_codec}) + the latest row per key at read; "
        "value: the Mixed-Iceberg table",
        config=config,
        notes=notes,
        detail={"phases": details},
    )
    publish(run, args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
