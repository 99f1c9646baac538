"""The core library imports without the flink and kafka extras: only the backends need them.

Each check imports every module of the package in a fresh interpreter in which the extra's
package cannot be found, so it fails in the full venv too (where the package is installed) as
soon as a core module imports pyflink or confluent_kafka at import time. ``scripts/test.sh``
also runs the unit tests in ``.venv-core``, a venv without the extras.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.support.extras import EXTRA_PACKAGES, NEEDS_AT_IMPORT, installed
from tests.support.services import ROOT

# Imports mixed_iceberg and every module in it with the packages named in argv[1] hidden, and
# prints the public names that are missing and {module: missing import name} for modules that fail.
_IMPORT_ALL = """
import importlib, importlib.abc, json, pkgutil, sys

blocked = set(sys.argv[1].split(","))

class Hidden(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in blocked:
            raise ModuleNotFoundError(f"No module named {name!r} (hidden by the test)", name=name)
        return None

sys.meta_path.insert(0, Hidden())
import mixed_iceberg

unexported = [name for name in mixed_iceberg.__all__ if not hasattr(mixed_iceberg, name)]
failed = {}
def record(module, exc):
    failed[module] = exc.name.partition(".")[0] if isinstance(exc, ImportError) and exc.name else repr(exc)
for info in pkgutil.walk_packages(mixed_iceberg.__path__, "mixed_iceberg.", onerror=lambda m: None):
    try:
        importlib.import_module(info.name)
    except ImportError as exc:
        record(info.name, exc)
print(json.dumps({"unexported": unexported, "failed": failed}))
"""


def _failing_imports(*hidden: str) -> dict[str, str]:
    done = subprocess.run(
        [sys.executable, "-c", _IMPORT_ALL, ",".join(hidden)], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, f"import mixed_iceberg failed with {', '.join(hidden)} hidden:\n{done.stderr}"
    report = json.loads(done.stdout.splitlines()[-1])
    assert report["unexported"] == [], f"names in mixed_iceberg.__all__ missing with {', '.join(hidden)} hidden"
    failed: dict[str, str] = report["failed"]
    return failed


def _check(hidden: set[str]) -> None:
    absent = hidden | {package for package in EXTRA_PACKAGES if not installed(package)}
    expected = {module: needs & absent for module, needs in NEEDS_AT_IMPORT.items() if needs & absent}
    found = _failing_imports(*sorted(absent))
    unexpected = {module: name for module, name in found.items() if name not in expected.get(module, ())}
    importable = sorted(expected.keys() - found.keys())
    assert not unexpected, (
        f"without {', '.join(sorted(absent))} these modules fail to import (module: missing package): {unexpected}. "
        "Optional packages are imported in their backend modules only (or where they are used), or, if a "
        "module's needs really changed, in NEEDS_AT_IMPORT of tests/support/extras.py"
    )
    assert not importable, f"{importable} now import without {', '.join(sorted(absent))}: drop them from NEEDS_AT_IMPORT"


@pytest.mark.parametrize("package", sorted(EXTRA_PACKAGES))
def test_only_the_listed_modules_need_the_extra_at_import(package: str) -> None:
    _check({package})


def test_the_package_and_its_public_names_import_without_any_extra() -> None:
    _check(set(EXTRA_PACKAGES))
