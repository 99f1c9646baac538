"""What one ``GET /metrics`` scrape costs with many tables: ``serve``'s metrics collector over a
SQLite catalog of ``--tables`` tables and a system database serving all of them.

```
.venv/bin/python -m bench.metrics_scrape            # 1,000 tables, a few minutes on 2 CPUs (creating them)
.venv/bin/python -m bench.metrics_scrape --quick    # 20 tables, smoke run
```

Each table is an unkeyed Mixed-Iceberg table with one small bulk load (one data file, one manifest);
the system database records each in ``table_runtime`` (group ``default``) with two ended
processes. Figures, each the whole scrape (catalog pointers, summaries, system database queries,
text exposition), timed in this process:

* ``cold``: the first scrape, every table summarized (its manifests read), no time budget: the
  baseline the others are compared with;
* ``warm``: the next scrape, nothing changed: what Prometheus pays every interval;
* ``warm, 1% changed``: after an overwrite of 1% of the tables (at least one);
* ``second collector, 5 s budget``: a fresh collector with the default budget, in the same
  process (so the manifests are in the process's cache): its duration, and the tables it left
  for later scrapes (``stale``).

Gathering (pointers, cache look-ups, system database) is a small part of a warm scrape; most of
it is prometheus_client writing the text, some 45 samples per table.

Every scrape is checked: one ``amoro_table_summary_data_files`` sample per summarized table, and
the counts of processes as recorded.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa
from prometheus_client.parser import text_string_to_metric_families

from bench.harness import Figure, Run, capture_environment, publish
from mixed_iceberg import load_catalog
from mixed_iceberg.config.kinds import OptimizingType
from mixed_iceberg.optimizer.sysdb.database import ProcessStatus, SystemDatabase
from mixed_iceberg.optimizer.sysdb.schema import PROCESSES
from mixed_iceberg.service.catalogs import ServedCatalogs
from mixed_iceberg.service.prometheus import MetricsCollector, exposition

_SCHEMA = pa.schema([pa.field("id", pa.int64()), pa.field("v", pa.string())])


def _progress(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _build(root: Path, tables: int) -> tuple[Path, Path, list[str]]:
    """The catalog, its catalogs file, the optimizer config and its system database."""
    (root / "wh").mkdir(parents=True)
    uri, warehouse = f"sqlite:///{root}/catalog.db", str(root / "wh")
    catalogs = root / "catalogs.yaml"
    catalogs.write_text(
        json.dumps({"catalogs": [{"name": "local", "type": "sql", "properties": {"uri": uri, "warehouse": warehouse}}]})
    )
    config = root / "optimizer.yaml"
    config.write_text(json.dumps({"system-database": f"sqlite:///{root}/system.db", "optimizer_groups": [{"name": "default"}]}))
    catalog = load_catalog("local", uri=uri, warehouse=warehouse)
    catalog.create_namespace("db")
    names = []
    for i in range(tables):
        name = f"db.t{i:05d}"
        catalog.create_table(name, _SCHEMA).bulk_load(pa.table({"id": [i], "v": ["x"]}, schema=_SCHEMA))
        names.append(name)
        if (i + 1) % 100 == 0:
            _progress(f"{i + 1} tables created")
    db = SystemDatabase(f"sqlite:///{root}/system.db")
    db.migrate()
    db.sync_tables("default", [(f"local.{n}", "local", n, 1.0) for n in names])
    rows = [
        {
            "table_id": f"local.{n}",
            "group_name": "default",
            "type": OptimizingType.MINOR,
            "status": status,
            "planned_by": "bench",
            "planned_ms": 0,
            "finished_ms": 1,
            "base_metadata": "",
            "unit": False,
            "task_count": 0,
            "bytes_in": 0,
            "bytes_out": 0,
            "rows_in": 0,
            "rows_out": 0,
            "files_in": 0,
            "files_out": 0,
        }
        for n in names
        for status in (ProcessStatus.SUCCESS, ProcessStatus.FAILED)
    ]
    with db.engine.begin() as c:
        c.execute(PROCESSES.insert(), rows)
    db.dispose()
    return catalogs, config, names


def _scrape(collector: MetricsCollector, tables: int) -> tuple[float, int, int]:
    """Seconds, summarized tables and stale tables of one scrape, its figures checked."""
    start = time.perf_counter()
    text = exposition(collector).decode()
    seconds = time.perf_counter() - start
    samples = {(s.name, s.labels.get("table")): s.value for f in text_string_to_metric_families(text) for s in f.samples}
    summarized = sum(1 for name, _ in samples if name == "amoro_table_summary_data_files")
    stale = int(samples["mixed_iceberg_metrics_summaries_stale", None])
    counted = [v for (name, _), v in samples.items() if name == "amoro_table_optimizing_process_total_count"]
    assert len(counted) == tables, "every served table has optimizing metrics"
    assert set(counted) == {2.0}, "every table's two recorded processes"
    assert summarized + stale == tables, (summarized, stale, tables)
    return seconds, summarized, stale


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", type=int, default=None, help="tables (default 1000, --quick 20)")
    parser.add_argument("--quick", action="store_true", help="a smoke run")
    parser.add_argument("--output", type=Path, default=None, help="the JSON result (default: bench/results/)")
    args = parser.parse_args(argv)
    tables = args.tables or (20 if args.quick else 1000)
    environment = capture_environment()
    with tempfile.TemporaryDirectory() as tmp:
        catalogs_file, config, names = _build(Path(tmp), tables)
        served = ServedCatalogs(catalogs_file)
        collector = MetricsCollector(served, config, budget_seconds=3600.0)
        cold, summarized, _ = _scrape(collector, tables)
        assert summarized == tables
        warm, _, _ = _scrape(collector, tables)
        catalog = served.get("local").mixed()
        changed = names[:: max(1, len(names) // max(1, tables // 100))][: max(1, tables // 100)]
        for name in changed:
            catalog.load_table(name).bulk_load(pa.table({"id": [0, 1], "v": ["y", "z"]}, schema=_SCHEMA), overwrite=True)
        warm_changed, _, stale = _scrape(collector, tables)
        assert stale == 0
        bounded = MetricsCollector(ServedCatalogs(catalogs_file), config)
        bounded_cold, _, bounded_stale = _scrape(bounded, tables)
    run = Run(
        bench="metrics_scrape",
        environment=environment,
        baseline="the cold scrape (every table summarized)",
        figures=[
            Figure("cold scrape", cold, "s", cold),
            Figure("warm scrape", warm, "s", cold),
            Figure("warm scrape, 1% of tables changed", warm_changed, "s", cold),
            Figure("second collector, 5 s budget", bounded_cold, "s", cold),
            Figure("tables left stale by the 5 s budget", bounded_stale, "tables"),
        ],
        config={"tables": tables, "quick": args.quick, "changed": len(changed)},
    )
    publish(run, args.output)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
