"""Run each test once across the two venvs of ``scripts/test.sh``.

The unit tests run first in the core venv (no flink or kafka extras): ``--record-passed FILE``
writes the id of every test that passed there. The full suite then runs in the main venv with
``--skip-passed FILE``: those tests are deselected (pytest reports them as such), so the unit
tests run once, in the narrower venv, and whatever the core venv skipped or failed runs again
beside the integration tests.
"""

from __future__ import annotations

from pathlib import Path

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("run-once", "run each test once across scripts/test.sh's venvs")
    group.addoption("--record-passed", metavar="FILE", help="write the ids of the tests that pass to FILE")
    group.addoption("--skip-passed", metavar="FILE", help="deselect the tests FILE lists (from --record-passed)")


def pytest_configure(config: pytest.Config) -> None:
    record = config.getoption("record_passed")
    if record:
        Path(record).write_text("")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> pytest.TestReport:
    report: pytest.TestReport = yield
    record = item.config.getoption("record_passed")
    if not record:
        return report
    # Only a test whose call and teardown passed counts: one skipped or failing runs again.
    if report.when == "call" and report.passed:
        item.stash[_CALL_PASSED] = True
    elif report.when == "teardown" and report.passed and item.stash.get(_CALL_PASSED, False):
        with Path(record).open("a") as out:
            out.write(item.nodeid + "\n")
    return report


_CALL_PASSED = pytest.StashKey[bool]()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    listed = config.getoption("skip_passed")
    if not listed or not Path(listed).exists():
        return
    passed = set(Path(listed).read_text().splitlines())
    deselected = [item for item in items if item.nodeid in passed]
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = [item for item in items if item.nodeid not in passed]
