"""Iceberg's REST Compatibility Kit (RCK) against any REST catalog URI, with its results parsed.

The kit is ``RESTCompatibilityKitCatalogTests`` (iceberg-open-api's test jar: Iceberg's
``CatalogTests`` run through a ``RESTCatalog`` client), run by JUnit's console launcher in one
JVM, with ``rck.local=false`` so it talks to the server at ``uri`` instead of starting its own.
The client reads ``CATALOG_URI``, ``CATALOG_WAREHOUSE`` and ``CATALOG_TOKEN`` from the environment
(RCKUtils maps ``CATALOG_X_Y`` to the catalog property ``x.y``) and every ``-D`` system property as
a catalog property too, which is how the ``rck.*`` flags reach it. Before each test the kit drops
the namespaces ``ns`` and ``newdb`` with their tables, so a run needs no clean-up of its own;
tables are written by the Java client itself under the server's warehouse, so the server and this
JVM must share a disk (``file:/tmp``...). The XML report of the run is parsed into one
:class:`KitCase` per test.

    python -m tests.support.rck --uri http://127.0.0.1:8181 [--warehouse W] [--token T]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import tomllib
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from tests.support.iceberg_rest_reference import ReferenceServerError, rest_jars

__all__ = [
    "EXPECTATIONS",
    "KIT_CLASS",
    "Expectations",
    "KitCase",
    "KitOutcome",
    "KitReport",
    "KitRunError",
    "parse_report",
    "report_in",
    "run_kit",
]

KIT_CLASS = "org.apache.iceberg.rest.RESTCompatibilityKitCatalogTests"

_REPORT = "TEST-junit-jupiter.xml"

#: What the kit is expected to skip and to fail against ``mixed-iceberg serve``, with reasons.
EXPECTATIONS = Path(__file__).resolve().parents[1] / "resources" / "rck-expectations.toml"


class KitRunError(RuntimeError):
    """The kit did not run (no JVM, no report); distinct from tests that ran and failed."""


class KitOutcome(Enum):
    PASSED = "passed"
    FAILED = "failed"
    SKIPPED = "skipped"


@dataclass(frozen=True, slots=True)
class KitCase:
    """One kit test: its method name (``testRenameTable()``), outcome and, unless it passed, the
    message (the assertion's or the assumption's) with the first lines of its stack trace."""

    name: str
    outcome: KitOutcome
    message: str = ""
    detail: str = ""

    @property
    def test(self) -> str:
        """The method name without parentheses (``testRenameTable``)."""
        return self.name.removesuffix("()")


@dataclass(frozen=True, slots=True)
class KitReport:
    """The outcome of one run of the kit."""

    uri: str
    cases: tuple[KitCase, ...]
    seconds: float
    log: Path

    def named(self, outcome: KitOutcome) -> list[KitCase]:
        return [case for case in self.cases if case.outcome is outcome]

    @property
    def passed(self) -> list[KitCase]:
        return self.named(KitOutcome.PASSED)

    @property
    def failed(self) -> list[KitCase]:
        return self.named(KitOutcome.FAILED)

    @property
    def skipped(self) -> list[KitCase]:
        return self.named(KitOutcome.SKIPPED)

    def counts(self) -> str:
        return f"{len(self.passed)} passed, {len(self.failed)} failed, {len(self.skipped)} skipped"

    def summary(self) -> str:
        """Counts, then each failure and skip with its message, one a line."""
        lines = [f"RCK against {self.uri}: {self.counts()} in {self.seconds:.1f} s"]
        for case in self.failed:
            lines.append(f"FAILED  {case.test}: {case.message}")
        for case in self.skipped:
            lines.append(f"SKIPPED {case.test}: {case.message}")
        return "\n".join(lines)

    def markdown(self) -> str:
        """The summary as a Markdown page: counts, then each failure with its message and the
        first lines of its stack trace (for whoever fixes the server)."""
        lines = [f"# RCK against {self.uri}", "", f"{self.counts()} in {self.seconds:.1f} s.", ""]
        for case in self.failed:
            lines += [f"## {case.test}", "", case.message, "", "```", case.detail, "```", ""]
        if self.skipped:
            lines += ["## Skipped", ""] + [f"- {case.test}: {case.message}" for case in self.skipped]
        return "\n".join(lines) + "\n"


@dataclass(frozen=True, slots=True)
class Expectations:
    """The kit's switches for a server and the tests expected to be skipped or to fail, each
    test name (``testRenameTable``) with its reason."""

    flags: Mapping[str, str]
    skipped: Mapping[str, str]
    failing: Mapping[str, str]

    @classmethod
    def load(cls, path: Path = EXPECTATIONS) -> Expectations:
        data = tomllib.loads(path.read_text())
        unknown = set(data) - {"flags", "skipped", "failing"}
        if unknown:
            raise ValueError(f"{path}: expected the tables flags, skipped and failing, found also {sorted(unknown)}")
        sections = {name: {str(k): str(v) for k, v in data.get(name, {}).items()} for name in ("flags", "skipped", "failing")}
        both = set(sections["skipped"]) & set(sections["failing"])
        if both:
            raise ValueError(f"{path}: a test is either skipped or failing, found both for {sorted(both)}")
        return cls(sections["flags"], sections["skipped"], sections["failing"])

    def surprises(self, report: KitReport) -> list[str]:
        """Every way ``report`` departs from the expectations, one a line: a failure or skip not
        listed, a listed test that passed or is missing from the run. Empty when it matches."""
        found = {case.test: case for case in report.cases}
        problems = []
        for case in report.failed:
            if case.test not in self.failing:
                problems.append(f"failed, not expected: {case.test}: {case.message}")
        for case in report.skipped:
            if case.test not in self.skipped:
                problems.append(f"skipped, not expected: {case.test}: {case.message}")
        for listed, expected in ((self.failing, KitOutcome.FAILED), (self.skipped, KitOutcome.SKIPPED)):
            for name in sorted(listed):
                ran = found.get(name)
                if ran is None:
                    problems.append(f"listed as {expected.value} but not in the run: {name}")
                elif ran.outcome is not expected:
                    problems.append(f"listed as {expected.value} but {ran.outcome.value}: {name} (update {EXPECTATIONS.name})")
        return problems


def _first_line(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


def _message(element: ET.Element) -> tuple[str, str]:
    text = element.text or ""
    message = element.get("message") or _first_line(text)
    if "assumption was not met due to:" in message:  # JUnit's AssumptionViolatedException wording
        message = message.split("assumption was not met due to:", 1)[1].strip().removeprefix("[").removesuffix("]")
        message = message or "an assumption of the test does not hold for this catalog (no message)"
    detail = "\n".join(text.strip().splitlines()[:12])
    return " ".join(message.split()), detail


def parse_report(path: Path) -> list[KitCase]:
    """The test cases of one JUnit XML report (the console launcher's legacy XML format)."""
    root = ET.parse(path).getroot()
    cases = []
    for case in root.iter("testcase"):
        outcome, message, detail = KitOutcome.PASSED, "", ""
        for child in case:
            if child.tag in ("failure", "error"):
                outcome = KitOutcome.FAILED
                message, detail = _message(child)
                break
            if child.tag == "skipped":
                outcome = KitOutcome.SKIPPED
                message, detail = _message(child)
        cases.append(KitCase(case.get("name", "?"), outcome, message, detail))
    return cases


def run_kit(
    uri: str,
    *,
    warehouse: str | None = None,
    token: str | None = None,
    flags: Mapping[str, str] | None = None,
    work_dir: Path | None = None,
    timeout: float = 900.0,
) -> KitReport:
    """Run the kit against the REST catalog at ``uri`` and return its report.

    ``flags`` are the kit's ``rck.*`` switches (``{"rck.requires-namespace-create": "true"}``),
    passed as system properties. ``work_dir`` keeps the XML report and the JVM's log (a temporary
    directory otherwise, and the log path then points at a file that is gone)."""
    jars = rest_jars()
    if work_dir is None:
        with tempfile.TemporaryDirectory(prefix="rck-") as scratch:
            return run_kit(uri, warehouse=warehouse, token=token, flags=flags, work_dir=Path(scratch), timeout=timeout)
    reports = work_dir / "reports"
    reports.mkdir(parents=True, exist_ok=True)
    log = work_dir / "rck.log"
    env = {key: value for key, value in os.environ.items() if not key.startswith("CATALOG_")}
    env["CATALOG_URI"] = uri
    if warehouse is not None:
        env["CATALOG_WAREHOUSE"] = warehouse
    if token is not None:
        env["CATALOG_TOKEN"] = token
    properties = {"rck.local": "false", **(flags or {})}
    command = [
        "java",
        "-Xmx768m",
        "-XX:+UseSerialGC",
        "-XX:TieredStopAtLevel=1",  # a short run: the C1 compiler alone starts faster
        "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
        *(f"-D{key}={value}" for key, value in properties.items()),
        "-jar",
        str(jars.console_launcher),
        "execute",
        "--disable-banner",
        "--details=none",
        "--class-path",
        jars.classpath(with_launcher=False, with_console=False),
        "--select-class",
        KIT_CLASS,
        *(f"--config={key}={value}" for key, value in properties.items()),
        "--reports-dir",
        str(reports),
    ]
    started = time.monotonic()
    with log.open("wb") as sink:
        try:
            proc = subprocess.run(
                command, stdout=sink, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env, cwd=work_dir, timeout=timeout
            )
        except subprocess.TimeoutExpired as exc:
            raise KitRunError(f"RCK: expected to finish within {timeout:.0f} s, found it still running; log {log}") from exc
    if not (reports / _REPORT).is_file():
        raise KitRunError(
            f"RCK: expected {reports / _REPORT} after the run (exit status {proc.returncode}), found none\n{_tail(log)}"
        )
    return report_in(work_dir, uri, seconds=time.monotonic() - started)


def _tail(log: Path) -> str:
    return log.read_text(errors="replace")[-4000:]


def report_in(work_dir: Path, uri: str, *, seconds: float | None = None) -> KitReport:
    """The report of the run that :func:`run_kit` (or the command line) left in ``work_dir``;
    ``seconds`` defaults to the duration JUnit recorded."""
    path = work_dir / "reports" / _REPORT
    cases = parse_report(path)
    if not cases:
        raise KitRunError(f"RCK: expected test cases in {path}, found none\n{_tail(work_dir / 'rck.log')}")
    if seconds is None:
        seconds = float(ET.parse(path).getroot().get("time", "0"))
    return KitReport(uri, tuple(cases), seconds, work_dir / "rck.log")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.support.rck", description="Run Iceberg's REST Compatibility Kit against a REST catalog."
    )
    parser.add_argument("--uri", required=True, help="the catalog's base URI, e.g. http://127.0.0.1:8181")
    parser.add_argument("--warehouse", help="the warehouse the client asks for (CATALOG_WAREHOUSE)")
    parser.add_argument("--token", help="a bearer token for the server (CATALOG_TOKEN)")
    parser.add_argument(
        "--flag",
        action="append",
        default=[],
        metavar="rck.KEY=VALUE",
        help="a kit switch, e.g. rck.requires-namespace-create=true",
    )
    parser.add_argument("--work-dir", type=Path, help="keep the XML report and the JVM's log here")
    parser.add_argument("--markdown", type=Path, help="also write the summary, failures' traces included, to this file")
    args = parser.parse_args(argv)
    flags = dict(flag.split("=", 1) for flag in args.flag)
    try:
        report = run_kit(args.uri, warehouse=args.warehouse, token=args.token, flags=flags, work_dir=args.work_dir)
    except (KitRunError, ReferenceServerError) as exc:
        print(exc, file=sys.stderr)
        return 2
    print(report.summary())
    if args.markdown is not None:
        args.markdown.write_text(report.markdown())
    return 1 if report.failed else 0


if __name__ == "__main__":
    sys.exit(main())
