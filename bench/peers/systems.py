"""One adapter per system: load, commit one upsert batch, optionally optimize, and three reads.

Each adapter imports its library lazily, so this module loads in every peer's environment.
Reads return Arrow tables (or anything ``pa.table`` accepts); the runner checksums them.
"""

from __future__ import annotations

import glob
import os
import site
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from bench.harness import Clock
from bench.peers.workload import SCHEMA


class System:
    """The interface: ``folder`` is the system's own empty directory; everything it writes goes there."""

    batch_dir = "upserts"  # which form of each batch the system consumes
    reads_mid_phase = True  # False: only the phase-end reads are meaningful (the reference)

    def __init__(self, folder: Path, workload: Path, options: dict[str, str]) -> None:
        self.folder, self.workload, self.options = folder, workload, options

    def version(self) -> str:
        raise NotImplementedError

    def load(self, rows: pa.Table) -> None:
        raise NotImplementedError

    def commit(self, batch: pa.Table) -> None:
        raise NotImplementedError

    def optimize(self) -> str | None:
        """Run the system's own compaction as its user would after a commit; None when it has none."""
        return None

    def optimize_io_floor(self) -> float | None:
        """CPU seconds pyarrow alone takes to read the files the last ``optimize`` read and to write
        the rows it wrote (None: not measured for this system). Called outside the timed optimize."""
        return None

    def read(self, lo: int | None = None, hi: int | None = None, k_below: int | None = None) -> Any:
        raise NotImplementedError

    def after_phase(self, phase: str) -> None:
        """Hook for the reference: it reads the oracle's state of ``phase``."""


class Reference(System):
    """The physical limit: pyarrow writes each batch as one Parquet file; reads read the merged
    state as one Parquet file (the oracle's, written by the orchestrator) with pushed-down filters.
    The oracle's state exists only at phase ends, so it has no reads inside the stream."""

    reads_mid_phase = False

    def version(self) -> str:
        return f"pyarrow {pa.__version__}"

    def load(self, rows: pa.Table) -> None:
        self.commit(rows)

    def commit(self, batch: pa.Table) -> None:
        n = len(list(self.folder.glob("*.parquet")))
        pq.write_table(batch, self.folder / f"{n:05d}.parquet", compression="zstd")

    def after_phase(self, phase: str) -> None:
        self.state = self.workload / "state" / f"{phase}.parquet"

    def read(self, lo: int | None = None, hi: int | None = None, k_below: int | None = None) -> Any:
        filters = None
        if lo is not None:
            filters = [("id", ">=", lo), ("id", "<", hi)]
        elif k_below is not None:
            filters = [("k", "<", k_below)]
        return pq.read_table(self.state, filters=filters)


class Mixed(System):
    """mixed-iceberg: change stream into the ChangeStore; ``optimize`` runs ``table.optimizing.run()``."""

    batch_dir = "changes"

    def __init__(self, folder: Path, workload: Path, options: dict[str, str]) -> None:
        super().__init__(folder, workload, options)
        os.environ["MIXED_ICEBERG_WAREHOUSE_DIR"] = str(folder)
        from mixed_iceberg import load_catalog

        props = {k.removeprefix("prop."): v for k, v in options.items() if k.startswith("prop.")}
        self.table = load_catalog("local").create_table("bench.peers", schema=SCHEMA, primary_key=["id"], properties=props)
        self.sequence = 0
        self.last_snapshot_id: int | None = None  # the BaseStore snapshot of the last optimize

    def version(self) -> str:
        from importlib.metadata import version

        return f"mixed-iceberg {version('mixed-iceberg')} (pyarrow {pa.__version__})"

    def load(self, rows: pa.Table) -> None:
        self.table.bulk_load(rows)

    def commit(self, batch: pa.Table) -> None:
        self.sequence += 1
        with self.table.new_transaction(("bench", self.sequence)) as txn:
            txn.write(batch)

    def optimize(self) -> str | None:
        result = self.table.optimizing.run()
        self.last_snapshot_id = result.snapshot_id if result.committed else None
        return result.type.value if result.type else None

    def optimize_io_floor(self) -> float | None:
        """The floor of the last run's I/O, from what its BaseStore snapshot committed: pyarrow
        reading every file it replaced (data and delete files) and every change file it merged
        (the sequences its optimized sequence moved over; of delete files the key alone), and
        writing the rows of every file it added (zstd, dictionaries where the writer would use
        them). Neither planning, the key merge, the key probe nor the commit is in it: what is
        left above it is the optimizer's own overhead."""
        from pyiceberg.manifest import ManifestEntryStatus

        from mixed_iceberg.basestore.optimized_sequence import read_optimized_sequence
        from mixed_iceberg.format import parse_change
        from mixed_iceberg.store.manifests.live_files import live_files
        from mixed_iceberg.store.write.data_file import dictionary_columns
        from mixed_iceberg.store.write.layout import partition_path
        from mixed_iceberg.typedef import DataFileType

        if self.last_snapshot_id is None:
            return None
        base, change = self.table.base_store, self.table.change_store
        snapshot = base.metadata.snapshot_by_id(self.last_snapshot_id)
        if snapshot is None:  # the handle predates the commit: reload it (outside the timings)
            base, change = self.table.refresh().base_store, self.table.change_store
            snapshot = base.metadata.snapshot_by_id(self.last_snapshot_id)
        assert snapshot is not None
        assert change is not None
        parent = base.metadata.snapshot_by_id(snapshot.parent_snapshot_id) if snapshot.parent_snapshot_id else None
        read, written = [], []
        for manifest in snapshot.manifests(base.io):
            if manifest.added_snapshot_id != snapshot.snapshot_id:
                continue
            for entry in manifest.fetch_manifest_entry(base.io, discard_deleted=False):
                if entry.snapshot_id != snapshot.snapshot_id:
                    continue
                if entry.status == ManifestEntryStatus.DELETED:
                    read.append(entry.data_file.file_path)
                elif entry.status == ManifestEntryStatus.ADDED:
                    written.append(entry.data_file.file_path)
        keys: list[str] = []  # change delete files: their key column alone, all a merge needs of them
        before, after = read_optimized_sequence(base, parent), read_optimized_sequence(base, snapshot)
        for live in live_files(change, change.current_snapshot()):
            path = partition_path(change, live.data_file)
            if before.get(path, 0) < live.sequence_number <= after.get(path, 0):
                is_delete = parse_change(live.data_file.file_path, live.sequence_number).file_type is DataFileType.EQ_DELETE_FILE
                (keys if is_delete else read).append(live.data_file.file_path)

        def local(path: str) -> str:
            return path.removeprefix("file://")

        outputs = [pq.ParquetFile(local(p)).read() for p in written]
        clock = Clock.start()
        for path in read:
            pq.ParquetFile(local(path)).read()
        for path in keys:
            pq.ParquetFile(local(path)).read(columns=list(self.table.primary_key))
        for rows in outputs:
            pq.write_table(rows, pa.BufferOutputStream(), compression="zstd", use_dictionary=dictionary_columns(rows))
        return clock.elapsed().cpu_s

    def read(self, lo: int | None = None, hi: int | None = None, k_below: int | None = None) -> Any:
        row_filter = None
        if lo is not None:
            row_filter = f"id >= {lo} and id < {hi}"
        elif k_below is not None:
            row_filter = f"k < {k_below}"
        return self.table.scan(row_filter=row_filter).to_arrow()


class PyIceberg(System):
    """pyiceberg ``Table.upsert`` (copy-on-write) on a SQLite SqlCatalog."""

    def __init__(self, folder: Path, workload: Path, options: dict[str, str]) -> None:
        super().__init__(folder, workload, options)
        from pyiceberg.catalog.sql import SqlCatalog

        self.catalog = SqlCatalog("bench", uri=f"sqlite:///{folder}/catalog.db", warehouse=f"file://{folder}")
        self.catalog.create_namespace("bench")
        self.table = self.catalog.create_table("bench.peers", schema=SCHEMA)
        with self.table.update_schema() as update:
            update.set_identifier_fields("id")

    def version(self) -> str:
        import pyiceberg

        return f"pyiceberg {pyiceberg.__version__} (pyarrow {pa.__version__})"

    def load(self, rows: pa.Table) -> None:
        self.table.append(rows)

    def commit(self, batch: pa.Table) -> None:
        self.table.upsert(batch)

    def read(self, lo: int | None = None, hi: int | None = None, k_below: int | None = None) -> Any:
        self.table = self.catalog.load_table("bench.peers")  # a reader sees the latest commit
        row_filter = "True"
        if lo is not None:
            row_filter = f"id >= {lo} and id < {hi}"
        elif k_below is not None:
            row_filter = f"k < {k_below}"
        return self.table.scan(row_filter=row_filter).to_arrow()


class Delta(System):
    """delta-rs ``merge`` (copy-on-write, DataFusion); reads through DataFusion (QueryBuilder)."""

    def __init__(self, folder: Path, workload: Path, options: dict[str, str]) -> None:
        super().__init__(folder, workload, options)
        import deltalake

        self.dl, self.path = deltalake, str(folder / "t")

    def version(self) -> str:
        return f"deltalake {self.dl.__version__} (pyarrow {pa.__version__})"

    def load(self, rows: pa.Table) -> None:
        self.dl.write_deltalake(self.path, rows)

    def commit(self, batch: pa.Table) -> None:
        dt = self.dl.DeltaTable(self.path)
        (
            dt.merge(source=batch, predicate="t.id = s.id", source_alias="s", target_alias="t")
            .when_matched_update_all()
            .when_not_matched_insert_all()
            .execute()
        )

    def optimize(self) -> str | None:
        if self.options.get("optimize") != "compact":
            return None
        self.dl.DeltaTable(self.path).optimize.compact()
        return "compact"

    def read(self, lo: int | None = None, hi: int | None = None, k_below: int | None = None) -> Any:
        where = ""
        if lo is not None:
            where = f" where id >= {lo} and id < {hi}"
        elif k_below is not None:
            where = f" where k < {k_below}"
        query = self.dl.QueryBuilder().register("t", self.dl.DeltaTable(self.path))
        return pa.table(query.execute(f"select * from t{where}").read_all())


class DuckLake(System):
    """DuckLake (duckdb 1.4.4, the ducklake extension loaded from its wheel by path): ``MERGE INTO``."""

    def __init__(self, folder: Path, workload: Path, options: dict[str, str]) -> None:
        super().__init__(folder, workload, options)
        import duckdb

        self.duckdb = duckdb
        paths = [
            p
            for sp in site.getsitepackages()
            for p in glob.glob(f"{sp}/duckdb_ext/extensions/v{duckdb.__version__}/*/ducklake.duckdb_extension")
        ]
        if not paths:
            raise RuntimeError(f"no ducklake extension for duckdb {duckdb.__version__} in {site.getsitepackages()}")
        self.con = duckdb.connect()
        self.con.execute(f"LOAD '{paths[0]}'")
        (folder / "data").mkdir()
        self.con.execute(f"ATTACH 'ducklake:{folder}/meta.ducklake' AS lake (DATA_PATH '{folder}/data/')")

    def version(self) -> str:
        return f"duckdb {self.duckdb.__version__} + ducklake (pyarrow {pa.__version__})"

    def load(self, rows: pa.Table) -> None:
        self.con.register("src", rows)
        self.con.execute("CREATE TABLE lake.t AS SELECT * FROM src")
        self.con.unregister("src")

    def commit(self, batch: pa.Table) -> None:
        self.con.register("src", batch)
        self.con.execute(
            "MERGE INTO lake.t USING src ON lake.t.id = src.id "
            "WHEN MATCHED THEN UPDATE SET k = src.k, v = src.v, s = src.s, ts = src.ts "
            "WHEN NOT MATCHED THEN INSERT VALUES (src.id, src.k, src.v, src.s, src.ts)"
        )
        self.con.unregister("src")

    def optimize(self) -> str | None:
        if self.options.get("optimize") != "merge":
            return None
        self.con.execute("CALL ducklake_merge_adjacent_files('lake')")
        return "merge_adjacent_files"

    def read(self, lo: int | None = None, hi: int | None = None, k_below: int | None = None) -> Any:
        where = ""
        if lo is not None:
            where = f" WHERE id >= {lo} AND id < {hi}"
        elif k_below is not None:
            where = f" WHERE k < {k_below}"
        result = self.con.execute(f"SELECT * FROM lake.t{where}").arrow()
        return result.read_all() if hasattr(result, "read_all") else result


class Paimon(System):
    """pypaimon 2.1 primary-key table with the native (pypaimon-rust) read, write and commit paths."""

    def __init__(self, folder: Path, workload: Path, options: dict[str, str]) -> None:
        super().__init__(folder, workload, options)
        from pypaimon import CatalogFactory, Schema

        self.catalog = CatalogFactory.create({"warehouse": str(folder)})
        self.catalog.create_database("bench", False)
        table_options = {"bucket": options.get("bucket", "2"), "file.format": "parquet"}
        if options.get("native", "true") == "true":
            table_options |= {"read.native.enabled": "true", "write.native.enabled": "true", "commit.native.enabled": "true"}
        schema = Schema.from_pyarrow_schema(SCHEMA, primary_keys=["id"], options=table_options)
        self.catalog.create_table("bench.peers", schema, False)

    def version(self) -> str:
        from importlib.metadata import version

        native = "native" if self.options.get("native", "true") == "true" else "pure Python"
        return f"pypaimon {version('pypaimon')} + pypaimon-rust {version('pypaimon-rust')}, {native} (pyarrow {pa.__version__})"

    def load(self, rows: pa.Table) -> None:
        self.commit(rows)

    def commit(self, batch: pa.Table) -> None:
        table = self.catalog.get_table("bench.peers")
        builder = table.new_batch_write_builder()
        write = builder.new_write()
        write.write_arrow(batch)
        commit = builder.new_commit()
        commit.commit(write.prepare_commit())
        write.close()
        commit.close()

    def read(self, lo: int | None = None, hi: int | None = None, k_below: int | None = None) -> Any:
        table = self.catalog.get_table("bench.peers")
        builder = table.new_read_builder()
        pb = builder.new_predicate_builder()
        if lo is not None:
            builder = builder.with_filter(pb.and_predicates([pb.greater_or_equal("id", lo), pb.less_than("id", hi)]))
        elif k_below is not None:
            builder = builder.with_filter(pb.less_than("k", k_below))
        out = builder.new_read().to_arrow(builder.new_scan().plan().splits())
        # The filter is pushed down to files and pages; rows outside it may still come back.
        if lo is not None:
            out = out.filter(pc.and_(pc.greater_equal(out["id"], lo), pc.less(out["id"], hi)))
        elif k_below is not None:
            out = out.filter(pc.less(out["k"], k_below))
        return out


SYSTEMS: dict[str, type[System]] = {
    "reference": Reference,
    "mixed": Mixed,
    "pyiceberg": PyIceberg,
    "deltalake": Delta,
    "ducklake": DuckLake,
    "paimon": Paimon,
}
