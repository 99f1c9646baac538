"""``mixed-iceberg``: operate tables and optimizers from the shell.

mixed-iceberg [--catalog local] status   db.orders     file classes, pending optimizing type
mixed-iceberg status                                   the optimizer groups (as `groups`)
mixed-iceberg [--catalog local] optimize db.orders [--type minor|major|full]
mixed-iceberg optimizer --group default [--threads 2]  run an optimizer (the local container)
mixed-iceberg groups                                   optimizer groups: live optimizers, backlog, tables
mixed-iceberg serve [--config conf/service.yaml]       the catalogs as an Iceberg REST catalog (docs/rest.md)
"""

from __future__ import annotations

import argparse
import json
import logging
import signal
import sys
from collections.abc import Sequence
from dataclasses import asdict

from mixed_iceberg import MixedIcebergError, load_catalog
from mixed_iceberg.optimizing.collect import collect
from mixed_iceberg.optimizing.model import FileClass

__all__ = ["main"]


def _status(catalog: str, name: str) -> dict[str, object]:
    """What the table's metadata tells, without reading a data file (see docs/optimizing.md).

    The rows of the merged view are not among it: how many of the change inserts replace a
    base row, and which rows the change deletes hit, only a read can say. Hence the counts
    by kind, and a delete ratio that counts both kinds of delete against all rows written.
    """
    table = load_catalog(catalog).load_table(name)
    config = table.config.optimizing
    collected = collect(table.handle)
    evaluation = table.optimizing.evaluate()
    classes = {c.value: 0 for c in FileClass}
    for part in collected.partitions:
        for file in part.base:
            classes[config.classify(file.size).value] += 1
    base_records = sum(f.records for p in collected.partitions for f in p.base)
    position_deleted = sum(f.pos_delete_records for p in collected.partitions for f in p.base)
    change_inserts = sum(c.records for p in collected.partitions for c in p.change if not c.is_delete)
    change_deletes = sum(c.records for p in collected.partitions for c in p.change if c.is_delete)
    written = base_records + change_inserts
    return {
        "table": name,
        "keyed": table.is_keyed,
        "base_files": classes,
        "base_delete_files": len(collected.delete_files),
        "change_files_unmerged": len(collected.change_files),
        "base_records": base_records,
        "base_position_deleted_records": position_deleted,
        "change_insert_records_unmerged": change_inserts,
        "change_delete_records_unmerged": change_deletes,
        "delete_ratio": round((position_deleted + change_deletes) / written, 4) if written else 0.0,
        "pending": evaluation.type.value if evaluation.type else None,
        "partitions": [
            {"partition": p.path or "<unpartitioned>", "pending": p.type.value if p.type else None, "reason": p.reason}
            for p in evaluation.partitions
        ],
    }


def _run_optimizer(config_path: str | None, group: str, threads: int) -> int:
    from mixed_iceberg.optimizer.config import load_optimizer_config
    from mixed_iceberg.optimizer.service import OptimizerService

    service = OptimizerService(load_optimizer_config(config_path), group, threads=threads, container="local")

    def stop(signum: int, _: object) -> None:
        logging.getLogger(__name__).info("signal %d: stopping the optimizer", signum)
        service.request_stop()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    service.run_forever()
    return 0


def _groups(config_path: str | None) -> int:
    from mixed_iceberg.optimizer.config import load_optimizer_config
    from mixed_iceberg.optimizer.report import group_report, warnings
    from mixed_iceberg.optimizer.sysdb.database import SystemDatabase

    config = load_optimizer_config(config_path)
    db = SystemDatabase(config.system_database)
    db.migrate()
    report = group_report(db, config)
    for line in warnings(report):
        print(f"mixed-iceberg: {line}", file=sys.stderr)
    print(json.dumps(report, indent=2))
    return 0


def _serve(config_path: str | None, host: str | None, port: int | None) -> int:
    from mixed_iceberg.service import load_service_config, serve

    return serve(load_service_config(config_path, host=host, port=port))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="mixed-iceberg", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--catalog", default="local", help="catalog name in conf/catalogs.yaml (default: local)")
    parser.add_argument("-v", "--verbose", action="store_true", help="log each commit and task")
    sub = parser.add_subparsers(dest="command", required=True)
    status = sub.add_parser(
        "status", help="a table: file counts by class, delete ratio, pending type; no table: the optimizer groups"
    )
    status.add_argument("table", nargs="?", default=None)
    status.add_argument("--config", default=None, help="optimizer config, for the groups (default conf/optimizer.yaml)")
    optimize = sub.add_parser("optimize", help="run self-optimizing now")
    optimize.add_argument("table")
    optimize.add_argument("--type", choices=["minor", "major", "full"], default=None, help="force a type (default: what is due)")
    optimizer = sub.add_parser("optimizer", help="run an optimizer of a group in this process until SIGTERM/SIGINT")
    optimizer.add_argument("--group", default="default")
    optimizer.add_argument("--threads", type=int, default=1, help="executor threads (default 1)")
    optimizer.add_argument("--config", default=None, help="optimizer config (default conf/optimizer.yaml)")
    groups = sub.add_parser("groups", help="optimizer groups: live optimizers, pending tasks, table states")
    groups.add_argument("--config", default=None, help="optimizer config (default conf/optimizer.yaml)")
    serve = sub.add_parser("serve", help="serve the catalogs as an Iceberg REST catalog until SIGTERM/SIGINT")
    serve.add_argument("--config", default=None, help="service config (default conf/service.yaml)")
    serve.add_argument("--host", default=None, help="override the config's host")
    serve.add_argument("--port", type=int, default=None, help="override the config's port (0: any free port)")
    args = parser.parse_args(argv)
    level = logging.INFO if args.verbose or args.command in ("optimizer", "serve") else logging.WARNING
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        if args.command == "optimizer":
            return _run_optimizer(args.config, args.group, args.threads)
        if args.command == "serve":
            return _serve(args.config, args.host, args.port)
        if args.command == "groups" or (args.command == "status" and args.table is None):
            return _groups(args.config)
        if args.command == "status":
            report = _status(args.catalog, args.table)
        else:
            result = load_catalog(args.catalog).load_table(args.table).optimizing.run(args.type)
            report = {k: (v.value if hasattr(v, "value") else v) for k, v in asdict(result).items()}
    except MixedIcebergError as exc:
        print(f"mixed-iceberg: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
