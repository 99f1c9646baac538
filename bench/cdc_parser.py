"""CDC parser benchmark: ``CdcParser.parse`` of this tree beside the parser of a baseline revision.

    .venv/bin/python -m bench.cdc_parser                  # baseline: HEAD's cdc.py
    .venv/bin/python -m bench.cdc_parser --baseline 6edc5cc --batches 10

Both parsers run in this process on the same batches of valid messages, alternating which goes
first; each figure is the median over ``--repeats`` rounds of CPU microseconds per message
(``time.process_time``, so the pyarrow reader's threads count) and wall microseconds. The
baseline is ``mixed_iceberg/ingest/cdc.py`` as of ``--baseline``, loaded from git as its own
module (its imports come from this tree). Shapes: Debezium over the ingest job's table
(id, customer, qty, price), the same with a string, a date and a timestamp column, that wide
shape in Kafka Connect's envelope with Debezium's whole schema (``debezium-envelope``: what a
connector writes with ``schemas.enable=true``), and changelog JSON. Both parsers' outputs are
compared before anything is timed. The run goes to ``bench/results/cdc_parser-<date>-<commit>.json``
(``--json`` elsewhere), every round's figures in its detail.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pyarrow as pa

from bench.harness import ROOT, Clock, Figure, Run, capture_environment, publish
from mixed_iceberg.ingest import cdc
from tests.support.connect_envelopes import column, envelope_schema

SHAPES = ("debezium", "debezium-wide", "debezium-envelope", "changelog")

ORDERS = pa.schema([("id", pa.int64()), ("customer", pa.string()), ("qty", pa.int32()), ("price", pa.float64())])
WIDE = pa.schema([*ORDERS, ("note", pa.string()), ("day", pa.date32()), ("at", pa.timestamp("us"))])
#: Debezium's schema of the wide shape: what every message of a connector's topic carries.
WIDE_SCHEMA = envelope_schema(
    [column("id", "int64"), column("customer", "string"), column("qty", "int32"), column("price", "double"),
     column("note", "string"), column("day", "int32", "io.debezium.time.Date"),
     column("at", "int64", "io.debezium.time.MicroTimestamp")],
    table="orders",
)  # fmt: skip


def baseline_module(revision: str) -> ModuleType:
    source = subprocess.run(
        ["git", "show", f"{revision}:mixed_iceberg/ingest/cdc.py"], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout
    spec = importlib.util.spec_from_loader("mixed_iceberg.ingest._cdc_baseline", loader=None)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    exec(compile(source, f"{revision}:cdc.py", "exec"), module.__dict__)  # our own file at a revision
    return module


def messages(shape: str, count: int, seed: int) -> pa.Array:
    rng = np.random.default_rng(seed)
    out = []
    for i in range(count):
        key = int(rng.integers(0, count // 4 + 1))
        row: dict[str, Any] = {"id": key, "customer": f"c{key % 97}", "qty": int(rng.integers(1, 100)),
                               "price": round(float(rng.uniform(1, 500)), 2)}  # fmt: skip
        if shape in ("debezium-wide", "debezium-envelope"):
            row |= {"note": f"note {i} ünïcode", "day": 19000 + i % 500, "at": 1_700_000_000_000_000 + i}
        if shape == "changelog":
            message: dict[str, Any] = {"op": ("+I", "-U", "+U", "-D")[i % 4], "data": row}
        else:
            op = ("c", "u", "d")[i % 3]
            before = row if op != "c" else None
            message = {"before": before, "after": row if op != "d" else None, "op": op, "ts_ms": 1_700_000_000_000 + i,
                       "source": {"table": "orders", "lsn": i}}  # fmt: skip
            if shape == "debezium-envelope":
                message = {"schema": WIDE_SCHEMA, "payload": message}
        out.append(json.dumps(message, separators=(",", ":")).encode())
    return pa.array(out, pa.binary())


def run_shape(shape: str, new: ModuleType, old: ModuleType, args: argparse.Namespace) -> tuple[list[Figure], dict[str, Any]]:
    """The shape's figures (the current parser beside the baseline's) and every round's."""
    schema = WIDE if shape in ("debezium-wide", "debezium-envelope") else ORDERS
    fmt_name = "CHANGELOG_JSON" if shape == "changelog" else "DEBEZIUM_JSON"
    parsers = {
        "baseline": old.CdcParser(schema, ["id"], getattr(old.CdcFormat, fmt_name)),
        "current": new.CdcParser(schema, ["id"], getattr(new.CdcFormat, fmt_name)),
    }
    batches = [messages(shape, args.batch, seed) for seed in range(args.batches)]
    offsets = np.arange(args.batch, dtype=np.int64)
    for batch in batches[:1]:
        a, b = (p.parse(batch, offsets) for p in parsers.values())
        if not a.changes.equals(b.changes) or len(a.dead) or len(b.dead):
            raise SystemExit(f"{shape}: the parsers disagree (or dead-letter valid messages)")
    cpu: dict[str, list[float]] = {name: [] for name in parsers}
    wall: dict[str, list[float]] = {name: [] for name in parsers}
    names = list(parsers)
    n = args.batch * len(batches)
    for round_ in range(args.repeats):
        for name in names if round_ % 2 == 0 else names[::-1]:
            parser = parsers[name]
            clock = Clock.start()
            for batch in batches:
                parser.parse(batch, offsets)
            took = clock.elapsed()
            cpu[name].append(took.cpu_s / n * 1e6)
            wall[name].append(took.wall_s / n * 1e6)
    figures = [
        Figure(f"{shape}: CPU per message", statistics.median(cpu["current"]), "us", statistics.median(cpu["baseline"])),
        Figure(f"{shape}: wall per message", statistics.median(wall["current"]), "us", statistics.median(wall["baseline"])),
    ]
    return figures, {"cpu_us": cpu, "wall_us": wall}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--baseline", default="HEAD", help="git revision of the baseline parser (default %(default)s)")
    parser.add_argument("--batch", type=int, default=40_000, help="messages per parse call")
    parser.add_argument("--batches", type=int, default=5, help="batches per round")
    parser.add_argument("--repeats", type=int, default=7, help="rounds (median reported)")
    parser.add_argument("--shape", action="append", choices=SHAPES)
    parser.add_argument(
        "--json", type=Path, default=None, help="the run's JSON (default bench/results/cdc_parser-<date>-<commit>.json)"
    )
    args = parser.parse_args()
    environment = capture_environment()
    old = baseline_module(args.baseline)
    revision = subprocess.run(["git", "rev-parse", "--short", args.baseline], cwd=ROOT, capture_output=True, text=True)
    figures: list[Figure] = []
    rounds: dict[str, Any] = {}
    for shape in args.shape or SHAPES:
        shape_figures, rounds[shape] = run_shape(shape, cdc, old, args)
        figures += shape_figures
    run = Run(
        "cdc_parser",
        environment.finished(),
        figures,
        baseline=f"mixed_iceberg/ingest/cdc.py at {revision.stdout.strip()} ({args.baseline}); value: this tree's",
        config={"baseline": revision.stdout.strip(), "batch": args.batch, "batches": args.batches, "repeats": args.repeats},
        notes=["medians over the rounds; CPU is the process's (the pyarrow JSON reader's threads count)"],
        detail={"rounds": rounds},
    )
    publish(run, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
