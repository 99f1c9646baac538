"""``mixed-iceberg``: operate catalogs, tables and optimizers from the shell (docs/cli.md).

  catalogs                          the catalogs of catalogs.yaml (secrets masked)
  tables [NAMESPACE]                the tables of --catalog, with their kind
  describe TABLE                    schema, key, partitioning, stores, properties
  properties get|set TABLE ...      read or set table properties (checked by the option registry)
  create SPEC.yaml                  create a table from a YAML spec
  status [TABLE] [--check]          records, unmerged change, delete ratio, health; no table: the groups
  optimize TABLE [--type T]         run self-optimizing now (says why when nothing is due)
  maintenance TABLE                 change TTL, manifests, snapshot expiry, orphans now
  groups | optimizers | processes   the optimizer service's state, from its system database
  sql "SELECT ..."                  read-only SQL over merged views (DuckDB; --csv, --limit, --timeout)
  optimizer --group G               run an optimizer in this process (the local container)
  serve [--config conf/service.yaml]  the catalogs as an Iceberg REST catalog (docs/rest.md)

Human tables by default; --json for scripts. Options go before or after the verb. Exit codes:
0 done, 1 unexpected error, 2 bad input, 3 storage or damaged table, 4 retry later,
5 a health target missed, 6 a health target close (status --check).
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable, Sequence
from typing import NoReturn

from mixed_iceberg.cli import catalogs, describe, groups, optimize, sql, status
from mixed_iceberg.cli.exits import ExitCode, classify, one_line
from mixed_iceberg.cli.progress import Progress
from mixed_iceberg.cli.render import Result, to_json

__all__ = ["main"]

#: Verbs that run until stopped: they log at INFO (each commit and task), as a service does.
_SERVICES = ("optimizer", "serve")


class _Parser(argparse.ArgumentParser):
    """argparse, with a usage error on one line (exit code 2, as argparse's own)."""

    def error(self, message: str) -> NoReturn:
        print(f"mixed-iceberg: {message} (see {self.prog} --help)", file=sys.stderr)
        raise SystemExit(ExitCode.USAGE)


def _options(parser: argparse.ArgumentParser, *, defaults: bool) -> None:
    """The options every verb takes, before or after it: the main parser holds the defaults, the
    verbs' copies leave a value unset unless given (argparse.SUPPRESS), so either place works."""

    def default(value: object) -> object:
        return value if defaults else argparse.SUPPRESS

    parser.add_argument("--catalog", default=default("local"), help="catalog name in catalogs.yaml (default: local)")
    parser.add_argument("--json", action="store_true", default=default(False), help="print JSON for scripts")
    parser.add_argument(
        "-v", "--verbose", action="store_true", default=default(False), help="log each commit and task; tracebacks"
    )
    parser.add_argument("-q", "--quiet", action="store_true", default=default(False), help="no progress lines")
    parser.add_argument(
        "--progress", action="store_true", default=default(False), help="progress lines even when stderr is not a terminal"
    )


def _serve(args: argparse.Namespace, progress: Progress) -> int:
    from mixed_iceberg.service import load_service_config, serve

    return serve(load_service_config(args.config, host=args.host, port=args.port))


def build_parser() -> argparse.ArgumentParser:
    """The whole command line (docs/cli.md documents it)."""
    parser = _Parser(prog="mixed-iceberg", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    _options(parser, defaults=True)
    common = _Parser(add_help=False)
    _options(common, defaults=False)
    sub = parser.add_subparsers(dest="command", required=True, metavar="VERB")
    catalogs.register(sub, common)
    describe.register(sub, common)
    status.register(sub, common)
    optimize.register(sub, common)
    groups.register(sub, common)
    sql.register(sub, common)
    serve = sub.add_parser("serve", parents=[common], help="serve the catalogs as an Iceberg REST catalog until SIGTERM/SIGINT")
    serve.add_argument("--config", default=None, help="service config (default conf/service.yaml)")
    serve.add_argument("--host", default=None, help="override the config's host")
    serve.add_argument("--port", type=int, default=None, help="override the config's port (0: any free port)")
    serve.set_defaults(func=_serve, long_running=True)
    return parser


def configure_logging(command: str, verbose: bool) -> None:
    """WARNING and up on stderr; INFO for ``-v`` and for the verbs that run as services.

    Alembic logs each migration check at INFO (seven lines at every optimizer start): it stays at
    WARNING unless ``-v``. The handler carries the level, so that the progress lines' temporary
    INFO level on ``mixed_iceberg`` does not print those records twice.
    """
    level = logging.INFO if verbose or command in _SERVICES else logging.WARNING
    root = logging.getLogger()
    if not root.handlers:  # as logging.basicConfig: a host (a test runner) that set up logging keeps its own
        handler = logging.StreamHandler()
        handler.setLevel(level)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        root.addHandler(handler)
        root.setLevel(level)
    logging.getLogger("alembic").setLevel(logging.INFO if verbose else logging.WARNING)


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns its exit code (:class:`~mixed_iceberg.cli.exits.ExitCode`)."""
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:  # --help (0) or a usage error (2), already printed
        return int(exc.code or 0)
    configure_logging(args.command, args.verbose)
    progress = Progress(not args.quiet and (args.progress or (getattr(args, "long_running", False) and sys.stderr.isatty())))
    handler: Callable[[argparse.Namespace, Progress], Result | int] = args.func
    try:
        outcome = handler(args, progress)
    except KeyboardInterrupt:
        print("mixed-iceberg: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # the CLI's boundary: every error one line, with its exit code
        code = classify(exc)
        if args.verbose:
            logging.getLogger(__name__).error("%s", type(exc).__name__, exc_info=True)
        if code is ExitCode.FAILED:
            hint = "" if args.verbose else " (run with -v for the traceback)"
            print(f"mixed-iceberg: unexpected error: {type(exc).__name__}: {one_line(str(exc))}{hint}", file=sys.stderr)
        else:
            print(f"mixed-iceberg: {one_line(str(exc))}", file=sys.stderr)
        return int(code)
    if isinstance(outcome, int):
        return outcome
    for line in outcome.warnings:
        print(f"mixed-iceberg: {line}", file=sys.stderr)
    print(to_json(outcome.data) if args.json else outcome.text)
    return int(outcome.code)


if __name__ == "__main__":
    sys.exit(main())
