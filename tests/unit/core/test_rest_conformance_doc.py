"""The REST Compatibility Kit's expectations (tests/resources/rck-expectations.toml) and the
harness's reading of the kit's report (tests/support/rck.py), without a JVM.

docs/rest-conformance.md mirrors the expectations file table by table; the integration test
(tests/integration/test_rest_compatibility_kit.py) holds ``serve`` to that file, so a page that
drifted from it would document results nobody checks.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.support.rck import Expectations, KitCase, KitOutcome, KitReport, parse_report
from tests.support.services import ROOT

PAGE = ROOT / "docs" / "rest-conformance.md"


def _table(section: str) -> dict[str, str]:
    """First column -> second column of the table under ``### section`` of the page."""
    text = PAGE.read_text()
    body = text.split(f"### {section}\n", 1)[1].split("\n### ", 1)[0]
    rows = [line for line in body.splitlines() if line.startswith("|")][2:]  # past the header and its rule
    return {cells[0]: cells[1] for cells in ([c.strip() for c in row.strip("|").split("|")] for row in rows)}


@pytest.mark.parametrize(("section", "field"), [("Switches", "flags"), ("Skipped", "skipped"), ("Failing", "failing")])
def test_the_page_lists_exactly_the_expectations_files_tests(section: str, field: str) -> None:
    listed = getattr(Expectations.load(), field)
    assert sorted(_table(section)) == sorted(listed), (
        f"docs/rest-conformance.md, {section}: mirror {field} of rck-expectations.toml"
    )


def test_the_page_gives_each_expected_skip_and_failure_the_files_reason() -> None:
    expectations = Expectations.load()
    for section, listed in (("Skipped", expectations.skipped), ("Failing", expectations.failing)):
        assert _table(section) == dict(listed), section


_REPORT = """<?xml version='1.0' encoding='UTF-8'?>
<testsuite name="JUnit Jupiter" tests="4" skipped="1" failures="1" errors="1" time="3.5">
<testcase name="testCreateTable()" classname="org.apache.iceberg.rest.RESTCompatibilityKitCatalogTests" time="0.1"/>
<testcase name="testRenameTable()" classname="org.apache.iceberg.rest.RESTCompatibilityKitCatalogTests" time="0.1">
<failure message="expected: 404 but was: 500" type="org.opentest4j.AssertionFailedError">org.opentest4j.AssertionFailedError: expected: 404 but was: 500
\tat org.apache.iceberg.catalog.CatalogTests.testRenameTable(CatalogTests.java:1)</failure>
</testcase>
<testcase name="testDropTable()" classname="org.apache.iceberg.rest.RESTCompatibilityKitCatalogTests" time="0.1">
<error type="org.apache.iceberg.exceptions.ServiceFailureException">org.apache.iceberg.exceptions.ServiceFailureException: Server error
\tat x</error>
</testcase>
<testcase name="testListNestedNamespaces()" classname="org.apache.iceberg.rest.RESTCompatibilityKitCatalogTests" time="0">
<skipped>org.junit.AssumptionViolatedException: assumption was not met due to: [Only valid when the catalog supports nested namespaces]
Expecting value to be true but was false</skipped>
</testcase>
</testsuite>
"""


def test_a_report_is_read_as_passed_failed_and_skipped_with_each_message(tmp_path: Path) -> None:
    path = tmp_path / "TEST-junit-jupiter.xml"
    path.write_text(_REPORT)
    cases = {case.test: case for case in parse_report(path)}
    assert {name: case.outcome for name, case in cases.items()} == {
        "testCreateTable": KitOutcome.PASSED,
        "testRenameTable": KitOutcome.FAILED,
        "testDropTable": KitOutcome.FAILED,  # an error counts as a failure
        "testListNestedNamespaces": KitOutcome.SKIPPED,
    }
    assert cases["testRenameTable"].message == "expected: 404 but was: 500"
    assert cases["testDropTable"].message == "org.apache.iceberg.exceptions.ServiceFailureException: Server error"
    assert cases["testListNestedNamespaces"].message == "Only valid when the catalog supports nested namespaces"


def _report(**outcomes: KitOutcome) -> KitReport:
    return KitReport(
        "http://x", tuple(KitCase(f"{name}()", outcome, "why") for name, outcome in outcomes.items()), 1.0, Path("log")
    )


def test_surprises_name_an_unlisted_failure_a_listed_test_that_passes_and_one_that_did_not_run() -> None:
    expectations = Expectations(flags={}, skipped={"testA": "r"}, failing={"testB": "r", "testC": "r"})
    assert expectations.surprises(_report(testA=KitOutcome.SKIPPED, testB=KitOutcome.FAILED, testC=KitOutcome.FAILED)) == []
    found = expectations.surprises(
        _report(testA=KitOutcome.SKIPPED, testB=KitOutcome.PASSED, testD=KitOutcome.FAILED, testE=KitOutcome.SKIPPED)
    )
    assert [re.sub(r":.*| \(.*", "", line) for line in found] == [
        "failed, not expected",
        "skipped, not expected",
        "listed as failed but passed",
        "listed as failed but not in the run",
    ]
