"""Iceberg's REST Compatibility Kit (tests/support/rck.py), run as part of the suite.

First against Iceberg's own reference server (``iceberg_rest_reference``), which proves the
harness: the kit's jars, its switches, the parsing of its report. Every catalog test passes
there, and the kit skips only what it skips for every REST catalog. Then against
``mixed-iceberg serve``, held to the one file of expectations,
tests/resources/rck-expectations.toml (which docs/rest-conformance.md mirrors): a test that
fails or is skipped outside its lists fails this, and so does a listed test that passes. One JVM
per run; the kit's duration is logged with its summary.
"""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.iceberg_rest_reference import ReferenceServer
from tests.support.rck import Expectations, report_in, run_kit
from tests.support.rest_server import RestServer, write_catalogs
from tests.support.services import ROOT
from tests.support.sockets import listeners, outside_loopback, process_tree

pytestmark = pytest.mark.integration

logger = logging.getLogger(__name__)

#: The kit's catalog tests at Iceberg 1.10.0 (CatalogTests plus the kit's own), all of which ran.
_KIT_TESTS = 102

#: What the kit skips against the reference server run without switches: CatalogTests' defaults
#: the kit keeps for every REST catalog (empty and nested namespaces) and names with a dot
#: (``rck.supports-names-with-dot`` off).
_REFERENCE_SKIPS = {
    "createAndDropEmptyNamespace",
    "listNamespacesWithEmptyNamespace",
    "listTablesInEmptyNamespace",
    "namespacePropertiesOnEmptyNamespace",
    "tableCreationWithoutNamespace",
    "testListNestedNamespaces",
    "testNamespaceWithDot",
    "testTableNameWithDot",
}


def test_the_kit_passes_against_icebergs_reference_server_skipping_only_its_own_assumptions(
    iceberg_rest_reference: ReferenceServer, tmp_path: Path
) -> None:
    # Through the command line docs/rest-conformance.md offers; its exit status says "no failure".
    command = [sys.executable, "-m", "tests.support.rck", "--uri", iceberg_rest_reference.uri]
    command += ["--warehouse", iceberg_rest_reference.warehouse.as_uri(), "--work-dir", str(tmp_path)]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=900, check=False)
    logger.info("%s", done.stdout)
    assert done.returncode == 0, done.stdout + done.stderr
    report = report_in(tmp_path, iceberg_rest_reference.uri)
    assert done.stdout.startswith(f"RCK against {iceberg_rest_reference.uri}: {report.counts()}"), done.stdout
    assert len(report.cases) == _KIT_TESTS, report.summary()
    assert report.failed == [], report.summary()
    assert sorted(case.test for case in report.skipped) == sorted(_REFERENCE_SKIPS), report.summary()


def test_the_reference_server_listens_on_loopback_only(iceberg_rest_reference: ReferenceServer) -> None:
    found = listeners(process_tree([iceberg_rest_reference.pid]))
    assert found, "the reference server's JVM holds no listening socket"
    assert outside_loopback(found) == []


def test_the_kit_against_serve_fails_and_skips_exactly_what_the_expectations_list(tmp_path: Path) -> None:
    expectations = Expectations.load()
    home = tmp_path / "serve"
    # The kit's tables go to file:/tmp/<namespace>/<table> (CatalogTests' own locations), which
    # serve allows only inside a catalog's warehouse; the catalog's database stays under home.
    server = RestServer.start(home, catalogs_yaml=write_catalogs(home, warehouse=Path("/tmp")))
    try:
        report = run_kit(server.uri, warehouse=server.warehouse, flags=expectations.flags, work_dir=tmp_path / "kit")
    finally:
        server.stop()
    logger.info("%s", report.summary())
    assert len(report.cases) == _KIT_TESTS, report.summary()
    assert expectations.surprises(report) == [], f"{report.summary()}\nserve's log: {server.log}"
