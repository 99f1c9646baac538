"""Commit throughput and latency through REST: ``mixed-iceberg serve`` beside a direct SQL catalog
and Iceberg's reference REST server, in one run on one machine.

```
.venv/bin/python -m bench.rest_commits            # full run, a few minutes on 2 CPUs
.venv/bin/python -m bench.rest_commits --quick    # smoke run
```

Four systems, each over a fresh SQLite catalog of its own in one temporary folder (same disk):

* ``direct``: our library committing to its SQL catalog (``load_catalog(type="sql")``), the baseline;
* ``serve``: our library through ``mixed-iceberg serve`` (``load_catalog(type="rest")``), one
  server process over a SQL catalog like ``direct``'s;
* ``serve-workers``: the same with ``workers`` = the machine's CPUs (at least 2): uvicorn's
  supervisor runs that many server processes on one socket;
* ``reference``: our library through Iceberg's reference REST server (Iceberg Java's REST
  handlers and ``JdbcCatalog`` over SQLite, ``tests/support/iceberg_rest_reference.py``).

(A separate SQLite file each, rather than one shared: Iceberg 1.10's ``JdbcCatalog`` pins a read
transaction on a SQLite database in WAL mode, which ours is, see ``tests/support/spark.py``.)

Three scenarios: (a) one client appending to one table, (b) 8 clients on 8 tables, (c) 8 clients
on one table. A client is a process of its own (``multiprocessing``, spawn) with its own catalog;
a commit is one ``MixedTable.new_transaction((client, n))`` of a keyed table writing one new key,
timed from the transaction's start to its commit's return; a commit that conflicts
(``CommitConflictError``) is retried by the client and its latency counts every attempt. The
clients start together once all are ready. Throughput is all commits over the time from the
first client's first commit to the last client's last. Every table is then read back: one row
per commit made, or the run fails (a lost commit).
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa

from bench.harness import Figure, Run, capture_environment, publish

#: serve-workers: serve with ``workers`` = the machine's CPUs (uvicorn's supervisor, one socket)
SYSTEMS = ("direct", "serve", "serve-workers", "reference")
SERVE_WORKERS = max(2, os.cpu_count() or 2)


@dataclass(frozen=True, slots=True)
class Scenario:
    key: str
    label: str
    clients: int
    tables: int
    commits: int  # per client


FULL = (
    Scenario("a", "1 client, 1 table", 1, 1, 200),
    Scenario("b", "8 clients, 8 tables", 8, 8, 40),
    Scenario("c", "8 clients, 1 table", 8, 1, 30),
)
QUICK = (
    Scenario("a", "1 client, 1 table", 1, 1, 20),
    Scenario("b", "8 clients, 8 tables", 8, 8, 4),
    Scenario("c", "8 clients, 1 table", 8, 1, 4),
)

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.string())])


def _batch(key: int) -> pa.Table:
    return pa.table({"id": pa.array([key], pa.int64()), "v": ["x"], "_change_action": ["+I"]})


def _client(properties: dict[str, str], table: str, client: int, commits: int, ready: Any, go: Any, out: Any) -> None:
    """One client process: open the catalog and table, wait for ``go``, commit, report."""
    from mixed_iceberg import load_catalog
    from mixed_iceberg.exceptions import CommitConflictError

    try:
        mixed = load_catalog("bench", **properties).load_table(table)
        ready.release()
        go.wait()
        latencies, conflicts = [], 0
        first = time.perf_counter()
        for n in range(1, commits + 1):
            started = time.perf_counter()
            while True:
                try:
                    with mixed.new_transaction((f"client-{client}", n)) as txn:
                        txn.write(_batch(client * 1_000_000 + n))
                    break
                except CommitConflictError:
                    conflicts += 1
                    mixed.refresh()
            latencies.append(time.perf_counter() - started)
        out.put({"client": client, "latencies": latencies, "conflicts": conflicts, "first": first, "last": time.perf_counter()})
    except BaseException as exc:
        ready.release()
        out.put({"client": client, "error": f"{type(exc).__name__}: {exc}"})


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def run_scenario(properties: dict[str, str], system: str, scenario: Scenario) -> dict[str, Any]:
    """Create the scenario's tables, run its clients, check every commit is there."""
    from mixed_iceberg import load_catalog

    catalog = load_catalog("bench", **properties)
    namespace = f"bench_{scenario.key}"
    tables = [f"{namespace}.t{i}" for i in range(scenario.tables)]
    for name in tables:
        catalog.create_table(name, SCHEMA, primary_key=["id"])
    context = multiprocessing.get_context("spawn")
    ready, go, out = context.Semaphore(0), context.Event(), context.Queue()
    workers = [
        context.Process(
            target=_client,
            args=(properties, tables[client % scenario.tables], client, scenario.commits, ready, go, out),
            daemon=True,
        )
        for client in range(scenario.clients)
    ]
    for worker in workers:
        worker.start()
    for _ in workers:
        ready.acquire(timeout=300)
    go.set()
    reports = [out.get(timeout=1800) for _ in workers]
    for worker in workers:
        worker.join(60)
    errors = [r["error"] for r in reports if "error" in r]
    if errors:
        raise RuntimeError(f"{system} {scenario.label}: a client failed: {errors}")
    latencies = [latency for r in reports for latency in r["latencies"]]
    wall = max(r["last"] for r in reports) - min(r["first"] for r in reports)
    for name in tables:
        expected = scenario.commits * scenario.clients // scenario.tables
        found = catalog.load_table(name).scan().to_arrow().num_rows
        if found != expected:
            raise RuntimeError(f"{system} {scenario.label}: {name} expected {expected} rows (one per commit), found {found}")
    measured = {
        "commits": len(latencies),
        "commits_per_s": len(latencies) / wall,
        "p50_ms": statistics.median(latencies) * 1000,
        "p99_ms": _percentile(latencies, 0.99) * 1000,
        "conflicts_retried": sum(r["conflicts"] for r in reports),
        "wall_s": wall,
    }
    if properties.get("type") == "rest" and scenario.tables == 1:
        measured["answer_round_trip_p50_ms"] = _answer_round_trip_ms(catalog, tables[0])
    return measured


def _answer_round_trip_ms(catalog: Any, table: str) -> float:
    """The p50 of one unconditional load of the table's ChangeStore through the client (the
    request, the server's answer of the full metadata, the client's parse reusing the snapshots
    it holds, as a writer's parse of its commit's answer does): what REST adds to a
    commit at the least, since a commit's answer is that metadata, on top of the catalog work a
    direct commit does itself. A floor beside the commit figures, from the same run."""
    from mixed_iceberg._pyiceberg.rest_catalog import parse_answer

    client = catalog.iceberg
    namespace, _, name = catalog.change_identifier(table).rpartition(".")
    url = client.url("namespaces/{namespace}/tables/{table}", prefixed=True, namespace=namespace, table=name)
    first = client._session.get(url)
    first.raise_for_status()
    known = parse_answer(first.text, None).metadata  # the snapshots a writer holds already, as after its commits
    seconds = []
    for _ in range(60):
        started = time.perf_counter()
        response = client._session.get(url)
        response.raise_for_status()
        parse_answer(response.text, known)
        seconds.append(time.perf_counter() - started)
    return statistics.median(seconds[10:]) * 1000


@contextmanager
def system_properties(system: str, root: Path) -> Iterator[dict[str, str]]:
    """The ``load_catalog`` properties of ``system`` while its server (if any) runs."""
    home = root / system
    home.mkdir(parents=True)
    if system == "direct":
        yield {"type": "sql", "uri": f"sqlite:///{home}/catalog.db", "warehouse": str(home / "warehouse")}
    elif system in ("serve", "serve-workers"):
        from tests.support.rest_server import RestServer, write_catalogs

        workers = SERVE_WORKERS if system == "serve-workers" else 1
        server = RestServer.start(home, catalogs_yaml=write_catalogs(home, name="bench"), workers=workers)
        try:
            yield {"type": "rest", "uri": server.uri, "warehouse": server.warehouse}
        finally:
            server.stop()
    else:
        from tests.support.iceberg_rest_reference import reference_server

        with reference_server(home, catalog_name="bench") as server:
            yield {"type": "rest", "uri": server.uri}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.rest_commits", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run: few commits per client")
    parser.add_argument("--output", type=Path, help="write the JSON here instead of bench/results/")
    parser.add_argument("--scenarios", default="abc", help="a diagnostic run of some scenarios only, e.g. 'a'")
    parser.add_argument(
        "--systems", default=",".join(SYSTEMS), help=f"a diagnostic run of some systems only (direct is always run): {SYSTEMS}"
    )
    args = parser.parse_args(argv)
    scenarios = tuple(s for s in (QUICK if args.quick else FULL) if s.key in args.scenarios)
    systems = ("direct", *(s for s in SYSTEMS if s != "direct" and s in args.systems.split(",")))
    environment = capture_environment()
    results: dict[str, dict[str, dict[str, Any]]] = {}
    with tempfile.TemporaryDirectory(prefix="rest-commits-") as scratch:
        for system in systems:
            with ExitStack() as stack:
                properties = stack.enter_context(system_properties(system, Path(scratch)))
                for scenario in scenarios:
                    print(f"{system}: ({scenario.key}) {scenario.label} ...", file=sys.stderr, flush=True)
                    results.setdefault(scenario.key, {})[system] = run_scenario(properties, system, scenario)
    figures = []
    notes = []
    for scenario in scenarios:
        measured = results[scenario.key]
        direct = measured["direct"]
        for system in (s for s in ("serve", "serve-workers", "reference") if s in measured):
            ours = measured[system]
            prefix = f"({scenario.key}) {scenario.label}, {system}"
            figures += [
                Figure(f"{prefix}: commits/s", ours["commits_per_s"], "1/s", baseline=direct["commits_per_s"]),
                Figure(f"{prefix}: p50 commit", ours["p50_ms"], "ms", baseline=direct["p50_ms"]),
                Figure(f"{prefix}: p99 commit", ours["p99_ms"], "ms", baseline=direct["p99_ms"]),
            ]
        reference = measured.get("reference")
        for system in (s for s in ("serve", "serve-workers") if s in measured):
            serve = measured[system]
            versus = (
                f"{system} / reference commits/s = {serve['commits_per_s'] / reference['commits_per_s']:.2f} (target >= 1); "
                if reference
                else ""
            )
            floor = serve.get("answer_round_trip_p50_ms")
            notes.append(
                f"({scenario.key}) {system} adds {serve['p50_ms'] - direct['p50_ms']:+.1f} ms p50 over direct (target <= 2 ms"
                + (f"; one answer's round trip and parse, the floor: {floor:.1f} ms" if floor is not None else "")
                + "); "
                f"{versus}conflicts retried by clients: direct {direct['conflicts_retried']}, {system} {serve['conflicts_retried']}"
                + (f", reference {reference['conflicts_retried']}" if reference else "")
            )
    run = Run(
        "rest_commits",
        environment.finished(),
        figures,
        baseline="direct: our library committing to its SQL catalog (SQLite), same clients and tables",
        config={
            "quick": args.quick,
            "serve_workers": SERVE_WORKERS,
            "systems": list(systems),
            "scenarios": [vars_of(s) for s in scenarios],
        },
        notes=notes,
        detail=results,
    )
    publish(run, args.output)
    print("\n".join(notes))
    return 0


def vars_of(scenario: Scenario) -> dict[str, Any]:
    return {
        "key": scenario.key,
        "label": scenario.label,
        "clients": scenario.clients,
        "tables": scenario.tables,
        "commits": scenario.commits,
    }


if __name__ == "__main__":
    sys.exit(main())
