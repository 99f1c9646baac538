"""The forced pyarrow resolution works: PyFlink runs Python functions that use pyiceberg.

apache-beam (pulled in by apache-flink) pins pyarrow<17 while pyiceberg 0.12 needs >=18; the
venv is built with ``uv --override requirements/overrides.txt`` forcing pyarrow 20. This test
guards that override: a tiny DataStream job imports pyiceberg and pyarrow inside its map
function, in both Python execution modes, each in its own interpreter and JVM.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

import pyarrow as pa
import pytest

pytestmark = pytest.mark.integration

JOB = r"""
import json
import sys

from pyflink.common import Configuration, Types
from pyflink.datastream import StreamExecutionEnvironment

mode = sys.argv[1]
config = Configuration()
config.set_string("python.execution-mode", mode)
# Without these the workers would run whatever `python` is first on PATH.
config.set_string("python.executable", sys.executable)
config.set_string("python.client.executable", sys.executable)
env = StreamExecutionEnvironment.get_execution_environment(config)
env.set_parallelism(1)


def enrich(value):
    import pyarrow as pa
    import pyiceberg
    from pyiceberg.io.pyarrow import schema_to_pyarrow
    from pyiceberg.schema import Schema
    from pyiceberg.types import LongType, NestedField

    # Round-trip through pyiceberg's Arrow schema conversion: it fails on a pyarrow that
    # pyiceberg cannot use, not only on import.
    schema = schema_to_pyarrow(Schema(NestedField(1, "v", LongType(), required=True)))
    value = pa.Table.from_pylist([{"v": value}], schema=schema).column("v")[0].as_py()
    return ("even" if value % 2 == 0 else "odd", value, 1, pa.__version__, pyiceberg.__version__)


row = Types.TUPLE([Types.STRING(), Types.LONG(), Types.LONG(), Types.STRING(), Types.STRING()])
reduced = (
    env.from_collection(list(range(1, 101)), type_info=Types.LONG())
    .map(enrich, output_type=row)
    .key_by(lambda r: r[0], key_type=Types.STRING())
    .reduce(lambda a, b: (a[0], a[1] + b[1], a[2] + b[2], b[3], b[4]))
)
final = {}
with reduced.execute_and_collect("pyflink-smoke-" + mode) as results:
    for r in results:  # a rolling reduce emits every intermediate sum; keep the last per key
        final[r[0]] = [r[1], r[2], r[3], r[4]]
print("RESULT " + json.dumps(final, sort_keys=True))
"""


def test_venv_has_forced_pyarrow_and_pyiceberg(tmp_path: Path) -> None:
    import pyiceberg
    from pyiceberg.io.pyarrow import PyArrowFileIO

    assert pa.__version__.startswith("20."), f"expected pyarrow 20.x (forced override), found {pa.__version__}"
    assert pyiceberg.__version__ == "0.12.0"
    # pyiceberg's Arrow file IO works on the forced pyarrow: a file written through it reads back.
    io = PyArrowFileIO()
    path = f"file://{tmp_path}/probe.bin"
    with io.new_output(path).create() as stream:
        stream.write(b"mixed-iceberg")
    with io.new_input(path).open() as stream:
        assert stream.read() == b"mixed-iceberg"


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["process", "thread"])
def test_pyflink_job_uses_pyiceberg_and_pyarrow_in_python_functions(mode: str, tmp_path: Path) -> None:
    script = tmp_path / "job.py"
    script.write_text(JOB)
    env = dict(os.environ)
    # Flink's local cluster otherwise writes its logs into pyflink/log inside the venv.
    env["FLINK_LOG_DIR"] = str(tmp_path / "log")
    if mode == "thread":
        # The embedded interpreter (pemja) does not see the venv unless told where it is.
        site_packages = sysconfig.get_paths()["purelib"]
        env["PYTHONPATH"] = os.pathsep.join(p for p in (site_packages, env.get("PYTHONPATH")) if p)

    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, str(script), mode],
        capture_output=True,
        text=True,
        timeout=180,
        env=env,
        cwd=tmp_path,
        check=False,
    )
    elapsed = time.monotonic() - started

    assert proc.returncode == 0, f"{mode} job failed after {elapsed:.1f} s:\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
    result_lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert len(result_lines) == 1, proc.stdout
    final = json.loads(result_lines[0].removeprefix("RESULT "))
    assert final == {
        "even": [2550, 50, pa.__version__, "0.12.0"],
        "odd": [2500, 50, pa.__version__, "0.12.0"],
    }


SCRATCH_JOB = r"""
import sys
from pathlib import Path

from mixed_iceberg.flink_client import prepare_flink_client

scratch = prepare_flink_client()
from pyflink.table import EnvironmentSettings, TableEnvironment

TableEnvironment.create(EnvironmentSettings.in_streaming_mode()).execute_sql("SELECT 1").wait()
print("SCRATCH " + str(scratch))
print("FILES " + " ".join(sorted(p.name for p in scratch.iterdir())))
"""


@pytest.mark.slow
def test_a_flink_clients_jvm_scratch_files_are_its_own_and_removed_when_it_exits(tmp_path: Path) -> None:
    """Flink's local JVM extracts its 44 MB table planner to java.io.tmpdir on every start and
    leaves it there when killed: the client's JVM writes to a private directory instead, which is
    gone once the client exits, as is a dead client's left-over one."""
    root = tmp_path / "tmp" / "mixed-iceberg-flink"
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True, check=True)
    stale = root / dead.stdout.strip()
    stale.mkdir(parents=True)
    (stale / "flink-table-planner_left-over.jar").write_bytes(b"x")
    script = tmp_path / "scratch.py"
    script.write_text(SCRATCH_JOB)
    env = {**os.environ, "TMPDIR": str(tmp_path / "tmp"), "FLINK_LOG_DIR": str(tmp_path / "log")}
    proc = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=180, env=env, cwd=tmp_path, check=False
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    lines = dict(line.split(" ", 1) for line in proc.stdout.splitlines() if line.startswith(("SCRATCH ", "FILES ")))
    scratch = Path(lines["SCRATCH"])
    assert scratch.parent == root
    assert any(name.startswith("flink-table-planner") for name in lines["FILES"].split()), lines["FILES"]
    assert not scratch.exists()
    assert not stale.exists()
