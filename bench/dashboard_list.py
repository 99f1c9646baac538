"""What the dashboard's table list costs with many tables: ``GET /api/v1/dashboard/tables`` and
``GET /api/v1/dashboard/overview`` of ``serve``'s app over a SQLite catalog of ``--tables`` tables
and a system database serving all of them (the catalog and database of :mod:`bench.metrics_scrape`).

```
.venv/bin/python -m bench.dashboard_list            # 5,000 tables; creating them takes most of the run
.venv/bin/python -m bench.dashboard_list --quick    # 50 tables, smoke run
```

The list never loads a table: it reads the catalog's metadata pointers (one query), the
summaries the metrics collector keeps per pair of metadata locations, and the system database
(a fixed number of aggregate queries). Figures, each a whole request through Starlette's
TestClient (routing, the token-free app, JSON encoding), best of ``--repeat``:

* baseline: ``every table loaded and summarized``, one pass of the collector over every table
  (its manifests read), what a list that opened each table would pay at least; it also fills
  the summaries' cache the list reads (as the first overview or ``/metrics`` scrape does);
* ``list, every table``: ``?limit=10000&sort=files``, all rows, sorted;
* ``list, first page``: the default page of 500 rows, sorted by name;
* ``overview``: totals, statuses, the tables most in need, the groups.

Every answer is checked: the list's total equals the tables created, each row carries its
figures (one data file each), and the overview's totals add up.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from starlette.testclient import TestClient

from bench.harness import Figure, Run, capture_environment, publish
from bench.metrics_scrape import _build
from mixed_iceberg.service import create_app
from mixed_iceberg.service.settings import ServiceConfig

API = "/api/v1/dashboard"
#: The list's target with 5,000 tables (issue 37).
TARGET_S = 0.300


def _progress(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _timed(client: TestClient, path: str, repeat: int) -> tuple[list[float], Any]:
    times, body = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        response = client.get(path)
        times.append(time.perf_counter() - start)
        assert response.status_code == 200, response.text[:500]
        body = response.json()
    return times, body


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", type=int, default=None, help="tables (default 5000, --quick 50)")
    parser.add_argument("--repeat", type=int, default=7, help="requests of each kind (default 7)")
    parser.add_argument("--quick", action="store_true", help="a smoke run")
    parser.add_argument("--output", type=Path, default=None, help="the JSON result (default: bench/results/)")
    args = parser.parse_args(argv)
    tables = args.tables or (50 if args.quick else 5000)
    environment = capture_environment()
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        catalogs_file, _, _ = _build(Path(tmp), tables)
        _progress(f"{tables} tables created in {time.perf_counter() - started:.0f} s")
        with TestClient(create_app(ServiceConfig.model_validate({"catalogs-file": catalogs_file}))) as client:
            collector = client.app.state.metrics_collector  # type: ignore[attr-defined]
            collector.budget_seconds = 3600.0
            start = time.perf_counter()
            scrape = collector.scrape()
            loaded = time.perf_counter() - start
            assert sum(1 for t in scrape.tables if t.summary is not None) == tables
            _progress(f"every table summarized in {loaded:.1f} s")
            every, listed = _timed(client, f"{API}/tables?limit=10000&sort=files", args.repeat)
            assert listed["total"] == tables, listed["total"]
            assert len(listed["tables"]) == tables
            assert listed["stale"] == 0
            assert {(r["files"], r["group"], r["status"]) for r in listed["tables"]} == {(1, "default", "idle")}
            page, first = _timed(client, f"{API}/tables", args.repeat)
            assert len(first["tables"]) == min(500, tables)
            assert [r["table"] for r in first["tables"]] == sorted(r["table"] for r in first["tables"])
            over, overview = _timed(client, f"{API}/overview", args.repeat)
            assert overview["totals"]["tables"] == overview["totals"]["summarized"] == overview["totals"]["files"] == tables
    run = Run(
        bench="dashboard_list",
        environment=environment,
        baseline="every table loaded and summarized (one collector pass over every table's manifests)",
        figures=[
            Figure("list, every table: best", min(every), "s", loaded),
            Figure("list, every table: median", statistics.median(every), "s", loaded),
            Figure("list, first page (500): best", min(page), "s", loaded),
            Figure("overview: best", min(over), "s", loaded),
            Figure("overview: median", statistics.median(over), "s", loaded),
        ],
        config={"tables": tables, "quick": args.quick, "repeat": args.repeat, "target_s": TARGET_S},
        notes=[
            f"target: the list of {tables} tables under {TARGET_S * 1000:.0f} ms (issue 37); "
            f"median {statistics.median(every) * 1000:.0f} ms",
        ],
        detail={"list_every_s": every, "list_page_s": page, "overview_s": over},
    )
    publish(run, args.output)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
