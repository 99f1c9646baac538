"""Design choices the code comments name, each measured beside its alternative in the same run.

Each claim pairs the code's choice (*ours*: the library function as it runs) with the
alternative it was chosen over (a small local function here, never in the library), on the
sizes the code meets in the peers stream and the 1M-row benchmarks:

======================  ===================================================  ==========================
claim                   ours / alternative                                    size (full run)
======================  ===================================================  ==========================
sort_nodes              ``stable_order`` (int16 radix) / ``np.argsort``        a ChangeStore write of 50k
                        stable on the int64 tree-node ids                      rows over 4 nodes
sort_hashes             ``stable_order`` (one sort of ``hash << 32 | pos``)    a 500k-row segment's
                        / ``np.argsort`` stable on the int32 key hashes         key hashes (key index)
delete_writes           position-delete files of a task written in turn /      8 files (the most written
                        by the writer threads                                  in turn) x 20k positions
small_files(_key)       ``read_small_files`` / one dataset scan (all columns,  8 change files x 5k rows
                        the key column alone)
many_files              one dataset scan (ours beyond ``SMALL_READ_ROWS``) /   16 files x 50k rows
                        ``read_small_files``
position_deletes        ``read_data_files`` (one scan, NumPy masks) /          a 1M-row BaseStore after
                        pyiceberg's ``ArrowScan`` applying the deletes          a minor of 5 % upserts
newline_check           two ``.any()`` passes / one pass over ``a | b``         8 MB of CDC messages
keep_rows_small/mid/    ``keep_rows`` (``Table.filter``) / a dataset filter     30k / 300k / 1M rows in 16
large                   on pyarrow's threads, each then the layout's take      chunks, 90 % kept
key_lookup              ``KeyIndex.lookup`` (bitmap prefilter) /               2M BaseStore keys against
                        ``pc.index_in``                                        5k tail keys
======================  ===================================================  ==========================

Every claim runs ``--repeats`` times, ours and the alternative interleaved (their order
alternates), after one warm-up run of each whose results are checked equal. A figure is the
median of ours beside the alternative's median; the notes give each claim's spread (min-max of
both) and the quartiles of the per-repetition ratio ours / alternative. A claim whose ratio
quartiles straddle 1 (or lie within 5 % of it) is called *within noise*.

    nice -n 5 .venv/bin/python -m bench.design_choices            # 41 repeats, a few minutes
    .venv/bin/python -m bench.design_choices --quick              # sizes / 10, 3 repeats

``--scale`` multiplies every row count (``--quick`` sets 0.1). The run goes to
``bench/results/design_choices-<date>-<commit>.json`` (``--output`` elsewhere).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq
from pyiceberg.expressions import AlwaysTrue
from pyiceberg.io.pyarrow import ArrowScan, PyArrowFileIO
from pyiceberg.typedef import Record

from bench.harness import Clock, Figure, Run, capture_environment, publish
from mixed_iceberg import load_catalog
from mixed_iceberg.merge.latest import KeyIndex, keep_rows
from mixed_iceberg.reader.file_reads import read_data_files
from mixed_iceberg.reader.small_files import read_small_files
from mixed_iceberg.sorting import stable_order
from mixed_iceberg.store.write.parallel import writer_pool
from mixed_iceberg.store.write.position_deletes import write_positions_by_file

SCHEMA = pa.schema(
    [pa.field("id", pa.int64(), nullable=False), ("qty", pa.int32()), ("price", pa.float64()), ("name", pa.string())]
)
NOISE = 0.05  # ratio quartiles within 1 +- 5 %: no difference this run can tell


@dataclass(frozen=True, slots=True)
class Claim:
    """One design choice: ``ours`` (the code's) and ``alternative``, same inputs, comparable results."""

    key: str
    where: str
    size: str
    ours: Callable[[], Any]
    alternative: Callable[[], Any]
    same: Callable[[Any, Any], bool]
    #: also report process CPU (all threads): the claim is about CPU, or the work is single-threaded
    #: (then CPU is the steadier clock on a shared machine: it leaves out the time others ran)
    cpu: bool = False


@dataclass(frozen=True, slots=True)
class Measured:
    claim: Claim
    ours_wall: list[float]
    alt_wall: list[float]
    ours_cpu: list[float]
    alt_cpu: list[float]


def _rows(ids: np.ndarray, qty: int = 1) -> pa.Table:
    return pa.table(
        {
            "id": ids,
            "qty": np.full(len(ids), qty, np.int32),
            "price": ids.astype(np.float64) / 7,
            "name": pc.binary_join_element_wise("name-", pc.cast(pa.array(ids), pa.string()), ""),
        },
        schema=SCHEMA,
    )


def _n(rows: int, scale: float, least: int = 64) -> int:
    return max(least, int(rows * scale))


def _equal_arrays(a: Any, b: Any) -> bool:
    return bool(np.array_equal(np.asarray(a), np.asarray(b)))


def _equal_tables(a: pa.Table, b: pa.Table) -> bool:
    return bool(a.equals(b))


def _same_rows(a: pa.Table, b: pa.Table) -> bool:
    """Same rows in any order (the two readers may order files differently)."""
    if a.num_rows != b.num_rows:
        return False
    key = [("id", "ascending")]
    return bool(a.select(SCHEMA.names).sort_by(key).equals(b.select(SCHEMA.names).sort_by(key)))


# --- the claims ----------------------------------------------------------------------------


def sorting_claims(rng: np.random.Generator, scale: float) -> list[Claim]:
    nodes = rng.integers(4, 8, _n(50_000, scale), dtype=np.int64)  # 4 change buckets: node ids 4..7
    hashes = rng.integers(-(2**31), 2**31, _n(500_000, scale), dtype=np.int64).astype(np.int32)
    return [
        Claim(
            "sort_nodes",
            "mixed_iceberg/sorting.py (tree-node ids)",
            f"{len(nodes):,} rows over 4 tree nodes",
            lambda: stable_order(nodes),
            lambda: np.argsort(nodes, kind="stable"),
            _equal_arrays,
            cpu=True,
        ),
        Claim(
            "sort_hashes",
            "mixed_iceberg/sorting.py (int32 key hashes)",
            f"{len(hashes):,} key hashes",
            lambda: stable_order(hashes),
            lambda: np.argsort(hashes, kind="stable"),
            _equal_arrays,
            cpu=True,
        ),
    ]


def delete_write_claim(folder: Path, rng: np.random.Generator, scale: float) -> Claim:
    io = PyArrowFileIO()
    files, per_file = 8, _n(20_000, scale)
    groups = {
        f"file:{folder}/data/{i}.parquet": np.sort(rng.choice(per_file * 10, per_file, replace=False)).astype(np.int64)
        for i in range(files)
    }
    counter = iter(range(10**9))

    def write(target: str) -> int:
        path = f"file:{folder}/deletes/{next(counter)}-{Path(target).stem}.parquet"
        written = write_positions_by_file(io, path, {target: groups[target]}, spec_id=0, partition=Record(), properties={})
        return int(written.record_count)

    return Claim(
        "delete_writes",
        "mixed_iceberg/optimizing/execute.py (one file per node, written in turn)",
        f"{files} position-delete files x {per_file:,} positions",
        lambda: [write(t) for t in groups],
        lambda: list(writer_pool().map(write, list(groups))),
        lambda a, b: a == b,
    )


def _write_files(folder: Path, name: str, files: int, rows: int) -> list[str]:
    folder.mkdir(parents=True)
    paths = []
    for i in range(files):
        path = folder / f"{name}-{i}.parquet"
        pq.write_table(_rows(np.arange(i * rows, (i + 1) * rows, dtype=np.int64)), path, compression="zstd")
        paths.append(str(path))
    return paths


def read_claims(folder: Path, scale: float) -> list[Claim]:
    filesystem = pa.fs.LocalFileSystem()
    small = _write_files(folder / "small", "change", 8, _n(5_000, scale))
    many = _write_files(folder / "many", "fragment", 16, _n(50_000, scale))
    key = pa.schema([SCHEMA.field("id")])

    def by_file(paths: list[str], target: pa.Schema = SCHEMA) -> pa.Table:
        return read_small_files(filesystem, paths, target)[0]

    def by_dataset(paths: list[str], target: pa.Schema = SCHEMA) -> pa.Table:
        return ds.dataset(paths, schema=target, format="parquet", filesystem=filesystem).to_table(columns=target.names)

    return [
        Claim(
            "small_files",
            "mixed_iceberg/reader/small_files.py (small files one by one)",
            f"8 files x {pq.ParquetFile(small[0]).metadata.num_rows:,} rows, 4 columns",
            lambda: by_file(small),
            lambda: by_dataset(small),
            _equal_tables,
            cpu=True,
        ),
        Claim(
            "small_files_key",
            "mixed_iceberg/reader/small_files.py (small files one by one, the key column alone)",
            f"8 files x {pq.ParquetFile(small[0]).metadata.num_rows:,} rows, the key column",
            lambda: by_file(small, key),
            lambda: by_dataset(small, key),
            _equal_tables,
            cpu=True,
        ),
        Claim(
            "many_files",
            "mixed_iceberg/reader/small_files.py (beyond SMALL_READ_ROWS: the dataset's threads)",
            f"16 files x {pq.ParquetFile(many[0]).metadata.num_rows:,} rows",
            lambda: by_dataset(many),
            lambda: by_file(many),
            _equal_tables,
            cpu=True,
        ),
    ]


def position_delete_claim(folder: Path, rng: np.random.Generator, scale: float) -> Claim:
    rows = _n(1_000_000, scale, least=2_000)
    catalog = load_catalog("bench", type="sql", uri=f"sqlite:///{folder}/catalog.db", warehouse=str(folder / "wh"))
    table = catalog.create_table(
        "bench.orders",
        SCHEMA,
        primary_key=["id"],
        properties={"base.file-index.hash-bucket": "4", "change.file-index.hash-bucket": "4"},
    )
    table.bulk_load(_rows(np.arange(rows, dtype=np.int64)))
    keys = np.sort(rng.choice(rows, rows // 20, replace=False)).astype(np.int64)
    change = pa.concat_tables([_rows(keys, 1), _rows(keys, 2)])
    actions = pa.array(["-U"] * len(keys) + ["+U"] * len(keys), pa.string())
    with table.new_transaction(("bench", 1)) as txn:
        txn.write(change.append_column("_change_action", actions))
    table.optimizing.run("minor")
    base = table.base_store
    tasks = list(base.scan().plan_files())
    if not any(t.delete_files for t in tasks):
        raise SystemExit("the minor wrote no position deletes: the claim would not be exercised")
    schema = base.schema()
    deletes = sum(d.record_count for d in {d.file_path: d for t in tasks for d in t.delete_files}.values())
    return Claim(
        "position_deletes",
        "mixed_iceberg/reader/file_reads.py (one scan, deletes as NumPy masks)",
        f"BaseStore of {rows:,} rows + {len(keys):,} updated, {len(tasks)} files, {deletes:,} position deletes",
        lambda: read_data_files(base, tasks, schema, AlwaysTrue()),
        lambda: ArrowScan(base.metadata, base.io, schema, AlwaysTrue()).to_table(tasks),
        _same_rows,
    )


def newline_claim(rng: np.random.Generator, scale: float) -> Claim:
    size = _n(8 << 20, scale)
    data = rng.integers(0x20, 0x7F, size, dtype=np.uint8)  # printable JSON bytes, no line breaks (the common case)

    def two_passes() -> bool:
        return bool((data == 0x0A).any() or (data == 0x0D).any())

    def one_pass() -> bool:
        return bool(((data == 0x0A) | (data == 0x0D)).any())

    return Claim(
        "newline_check",
        "mixed_iceberg/ingest/cdc.py (two passes, not one with |)",
        f"{size / 2**20:.1f} MB of messages without line breaks",
        two_passes,
        one_pass,
        lambda a, b: a == b,
        cpu=True,
    )


def keep_rows_claims(rng: np.random.Generator, scale: float) -> list[Claim]:
    claims = []
    sizes = (
        ("keep_rows_small", _n(30_000, scale)),
        ("keep_rows_mid", _n(300_000, scale)),
        ("keep_rows_large", _n(1_000_000, scale)),
    )
    for key, rows in sizes:
        # A merge's rows come from several files: 16 chunks. The layout then takes every kept row.
        table = pa.Table.from_batches(_rows(rng.permutation(rows).astype(np.int64)).to_batches(max_chunksize=-(-rows // 16)))
        keep = rng.random(rows) < 0.9
        layout = pa.array(rng.permutation(int(keep.sum())))

        def threaded(table: pa.Table = table, keep: np.ndarray = keep, layout: pa.Array = layout) -> pa.Table:
            """The filter on pyarrow's threads that keep_rows used from 100,000 rows up until issue 34."""
            marked = table.append_column("__keep", pa.array(keep))
            return ds.dataset(marked).to_table(filter=pc.field("__keep"), columns=table.column_names).take(layout)

        def ours(table: pa.Table = table, keep: np.ndarray = keep, layout: pa.Array = layout) -> pa.Table:
            return keep_rows(table, keep).take(layout)

        claims.append(
            Claim(
                key,
                "mixed_iceberg/merge/latest.py (keep_rows: Table.filter, not a dataset filter on threads)",
                f"{rows:,} rows in 16 chunks, 90 % kept, then a take of every kept row",
                ours,
                threaded,
                _equal_tables,
            )
        )
    return claims


def key_lookup_claim(rng: np.random.Generator, scale: float) -> Claim:
    rows = _n(2_000_000, scale, least=20_000)
    base = pa.array(rng.permutation(rows).astype(np.int64))
    tail = pa.array(rng.choice(rows * 2, _n(5_000, scale, least=100), replace=False).astype(np.int64))
    index = KeyIndex([tail])
    dictionary = pc.dictionary_encode(tail).dictionary

    def plain() -> np.ndarray:
        return np.asarray(pc.index_in(base, value_set=dictionary).fill_null(-1).to_numpy(zero_copy_only=False), np.int64)

    return Claim(
        "key_lookup",
        "mixed_iceberg/merge/latest.py (_index_in's bitmap prefilter)",
        f"{rows:,} BaseStore keys against {len(tail):,} tail keys",
        lambda: index.lookup([base]),
        plain,
        _equal_arrays,
        cpu=True,
    )


# --- measuring -----------------------------------------------------------------------------


def measure(claim: Claim, repeats: int) -> Measured:
    if not claim.same(claim.ours(), claim.alternative()):  # the warm-up, checked
        raise SystemExit(f"{claim.key}: ours and the alternative give different results")
    times: dict[str, list[tuple[float, float]]] = {"ours": [], "alt": []}
    for i in range(repeats):
        order = (("ours", claim.ours), ("alt", claim.alternative))
        for name, work in order if i % 2 == 0 else order[::-1]:
            clock = Clock.start()
            work()
            elapsed = clock.elapsed()
            times[name].append((elapsed.wall_s, elapsed.cpu_s))
    return Measured(
        claim,
        [w for w, _ in times["ours"]],
        [w for w, _ in times["alt"]],
        [c for _, c in times["ours"]],
        [c for _, c in times["alt"]],
    )


def _quartiles(values: list[float]) -> tuple[float, float, float]:
    if len(values) < 2:
        return values[0], values[0], values[0]
    q1, q2, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return q1, q2, q3


def verdict(ours: list[float], alt: list[float]) -> tuple[str, tuple[float, float, float]]:
    """``ours faster`` / ``alternative faster`` / ``within noise``, from the per-repetition ratios."""
    q1, q2, q3 = _quartiles([o / a for o, a in zip(ours, alt, strict=True) if a > 0] or [1.0])
    if q3 < 1 - NOISE:
        return "ours faster", (q1, q2, q3)
    if q1 > 1 + NOISE:
        return "alternative faster", (q1, q2, q3)
    return "within noise", (q1, q2, q3)


def _ms(values: list[float]) -> str:
    return f"{statistics.median(values) * 1e3:.3g} ms [{min(values) * 1e3:.3g}-{max(values) * 1e3:.3g}]"


def report(measured: list[Measured]) -> tuple[list[Figure], list[str], dict[str, Any]]:
    figures, notes, detail = [], [], {}
    for m in measured:
        c = m.claim
        clocks = [("wall", m.ours_wall, m.alt_wall)] + ([("CPU", m.ours_cpu, m.alt_cpu)] if c.cpu else [])
        for clock, ours, alt in clocks:
            figures.append(Figure(f"{c.key}: {clock}, median", statistics.median(ours) * 1e3, "ms", statistics.median(alt) * 1e3))
            said, (q1, q2, q3) = verdict(ours, alt)
            notes.append(
                f"{c.key} ({clock}; {c.where}; {c.size}): ours {_ms(ours)}, alternative {_ms(alt)}; "
                f"ratio ours/alternative median {q2:.2f}, quartiles {q1:.2f}-{q3:.2f}: {said}"
            )
        detail[c.key] = {
            "where": c.where,
            "size": c.size,
            "ours_wall_s": m.ours_wall,
            "alternative_wall_s": m.alt_wall,
            "ours_cpu_s": m.ours_cpu,
            "alternative_cpu_s": m.alt_cpu,
            "verdict_wall": verdict(m.ours_wall, m.alt_wall)[0],
            "verdict_cpu": verdict(m.ours_cpu, m.alt_cpu)[0],
        }
    return figures, notes, detail


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="sizes / 10 and 3 repeats (unless set)")
    parser.add_argument("--scale", type=float, default=None, help="multiplies every row count (default 1; 0.1 with --quick)")
    parser.add_argument(
        "--repeats", type=int, default=None, help="interleaved repetitions per claim (default 41; 3 with --quick)"
    )
    parser.add_argument("--only", action="append", help="claim keys to run (default all); repeat the flag")
    parser.add_argument("--seed", type=int, default=34)
    parser.add_argument("--output", type=Path, help="the run's JSON (default bench/results/design_choices-<date>-<commit>.json)")
    args = parser.parse_args(argv)
    scale = args.scale if args.scale is not None else (0.1 if args.quick else 1.0)
    repeats = args.repeats if args.repeats is not None else (3 if args.quick else 41)
    environment = capture_environment()
    rng = np.random.default_rng(args.seed)
    measured = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        builders: list[tuple[set[str], Callable[[], list[Claim]]]] = [
            ({"sort_nodes", "sort_hashes"}, lambda: sorting_claims(rng, scale)),
            ({"delete_writes"}, lambda: [delete_write_claim(folder / "deletes", rng, scale)]),
            ({"small_files", "small_files_key", "many_files"}, lambda: read_claims(folder / "reads", scale)),
            ({"position_deletes"}, lambda: [position_delete_claim(folder / "table", rng, scale)]),
            ({"newline_check"}, lambda: [newline_claim(rng, scale)]),
            ({"keep_rows_small", "keep_rows_mid", "keep_rows_large"}, lambda: keep_rows_claims(rng, scale)),
            ({"key_lookup"}, lambda: [key_lookup_claim(rng, scale)]),
        ]
        for keys, build in builders:
            if args.only and not keys & set(args.only):
                continue
            for claim in build():
                if args.only and claim.key not in args.only:
                    continue
                print(f"{claim.key}: {claim.size} ...", file=sys.stderr, flush=True)
                measured.append(measure(claim, repeats))
    figures, notes, detail = report(measured)
    run = Run(
        "design_choices",
        environment.finished(),
        figures,
        baseline="the alternative each code comment says the choice was measured against, same inputs, interleaved",
        config={"quick": args.quick, "scale": scale, "repeats": repeats, "seed": args.seed, "noise": NOISE},
        notes=notes,
        detail=detail,
    )
    publish(run, args.output)


if __name__ == "__main__":
    main()
