"""The process environment a PyFlink client (``jobs/*.py``) needs before it starts its JVM.

One place for what both jobs set: Python workers see this venv and the project through
``PYTHONPATH`` and run as processes (one per subtask, as on a cluster) rather than threads of the
client; and the JVM's scratch files go to a directory of this client's own.

Flink's local JVM extracts its table planner (44 MB) to ``java.io.tmpdir`` on every start and
relies on ``deleteOnExit``, which a killed or halted JVM never runs; its shuffle, I/O and
distributed-cache directories are left the same way. Under the shared temp directory they pile up
until the disk is full (142 planner jars, 6 GB, after two days of test runs here). Each client
therefore gets ``<tmp>/mixed-iceberg-flink/<pid>``, removed when it exits, and every start
removes the directories of clients that are no longer alive.

The local mini-cluster's endpoints listen on loopback only (:data:`LOCAL_CLUSTER_DEFAULTS`):
Flink's defaults put its REST API, with job submission and cancellation on, and its blob server
on every interface. A job's ``flink`` settings override them (docs/ingest.md, docs/optimizer.md).
Beam's gRPC servers for Python workers in process mode, which no setting reaches, are moved by
the loopback agent (:func:`loopback_agent`) that the ingest job loads into its JVM.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import sysconfig
import tempfile
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType

from mixed_iceberg.exceptions import ConfigError

__all__ = ["LOCAL_CLUSTER_DEFAULTS", "local_cluster_settings", "loopback_agent", "prepare_flink_client", "scratch_root"]

_ROOT = Path(__file__).resolve().parents[1]
_LOOPBACK = "127.0.0.1"

#: Flink settings of a job's local mini-cluster (the client's own JVM), under the job's ``flink``
#: settings. Flink's defaults listen on every interface; these keep every endpoint Flink lets a
#: job place on loopback, and turn off what the REST API would let anyone who reaches it do: the
#: client watches and cancels its job through its JobClient, not through REST. Not applied under
#: ``flink run``, where the cluster's own configuration decides.
#:
#: What they cannot reach: the gRPC servers (Beam's Fn API: control, data, state, logging,
#: provisioning, artifacts) that a Python operator in process mode starts for its worker
#: processes. flink-python 2.2.1's copy of Beam's ``ServerFactory`` builds them with
#: ``NettyServerBuilder.forPort(port)``, the wildcard address, and no Flink option reaches it
#: (docs/ingest.md, "Network exposure"): :func:`loopback_agent` does. The ingest job's pandas
#: function needs process mode; the optimizer job runs in thread mode locally and has none.
LOCAL_CLUSTER_DEFAULTS: Mapping[str, str] = MappingProxyType(
    {
        "rest.bind-address": _LOOPBACK,  # the REST API and web UI
        "rest.address": _LOOPBACK,  # where a REST client looks for it
        "jobmanager.bind-host": _LOOPBACK,  # the blob server (and the JobManager's RPC, where it is remote)
        "jobmanager.rpc.address": _LOOPBACK,
        "taskmanager.bind-host": _LOOPBACK,  # the TaskManager's RPC and data exchange, where they listen
        "taskmanager.host": _LOOPBACK,
        "web.submit.enable": "false",  # no jar upload and run through REST
        "web.cancel.enable": "false",
        "web.rescale.enable": "false",
    }
)


def local_cluster_settings(flink: Mapping[str, str]) -> dict[str, str]:
    """:data:`LOCAL_CLUSTER_DEFAULTS` with a job's ``flink`` settings on top (a key set there wins:
    ``rest.bind-address: 0.0.0.0`` serves the web UI to other hosts)."""
    return {**LOCAL_CLUSTER_DEFAULTS, **flink}


#: Where the ingest job finds the loopback agent (built by ``scripts/jars/loopback-agent.sh``);
#: ``MIXED_ICEBERG_LOOPBACK_AGENT`` names another jar, or ``off``.
LOOPBACK_AGENT_JAR = _ROOT / ".jars" / "agent" / "mixed-iceberg-loopback-agent.jar"
_AGENT_VARIABLE = "MIXED_ICEBERG_LOOPBACK_AGENT"


def loopback_agent() -> Path | None:
    """The jar of the java agent (java/loopback-agent/) that makes Beam's Fn API gRPC servers, which
    a local job's Python workers in process mode talk to, listen on loopback instead of every
    interface; ``None`` where ``MIXED_ICEBERG_LOOPBACK_AGENT=off`` says to leave them there.

    Raises:
        ConfigError: the jar is not there (``bash scripts/jars/loopback-agent.sh`` builds it, and
            so does ``bash scripts/services/kafka.sh jars``).
    """
    setting = os.environ.get(_AGENT_VARIABLE, "").strip()
    if setting.lower() == "off":
        return None
    jar = Path(setting) if setting else LOOPBACK_AGENT_JAR
    if not jar.is_file():
        raise ConfigError(
            f"no loopback agent jar at {jar}: run `bash scripts/jars/loopback-agent.sh`, or set "
            f"{_AGENT_VARIABLE}=off to let the Python workers' gRPC servers listen on every interface"
        )
    return jar.resolve()


def scratch_root() -> Path:
    """Where the clients' private temp directories live."""
    return Path(tempfile.gettempdir()) / "mixed-iceberg-flink"


def prepare_flink_client(*, agent: Path | None = None) -> Path:
    """Sets this process's environment for a local PyFlink client; returns its JVM temp dir.

    ``agent``: a java agent's jar for the JVM (``-javaagent``), such as :func:`loopback_agent`'s.
    Call it before the first PyFlink import that starts a gateway. Idempotent."""
    site = sysconfig.get_paths()["purelib"]
    paths = [site, str(_ROOT), *os.environ.get("PYTHONPATH", "").split(os.pathsep)]
    os.environ["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(p for p in paths if p))
    os.environ.setdefault("_python_worker_execution_mode", "process")
    scratch = scratch_root() / str(os.getpid())
    if not scratch.is_dir():
        _remove_dead_clients()
        scratch.mkdir(parents=True, exist_ok=True)
        atexit.register(shutil.rmtree, scratch, ignore_errors=True)
    flag = f"-Djava.io.tmpdir={scratch}"
    jvm_args = os.environ.get("JVM_ARGS", "").split()
    if flag not in jvm_args:
        jvm_args = [*(a for a in jvm_args if not a.startswith("-Djava.io.tmpdir=")), flag]
    if agent is not None and f"-javaagent:{agent}" not in jvm_args:
        jvm_args.append(f"-javaagent:{agent}")
    os.environ["JVM_ARGS"] = " ".join(jvm_args)
    return scratch


def _remove_dead_clients() -> None:
    root = scratch_root()
    if not root.is_dir():
        return
    for entry in root.iterdir():
        if entry.name.isdigit() and not _alive(int(entry.name)):
            shutil.rmtree(entry, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's live process
        return True
    with contextlib.suppress(OSError):
        # A zombie counts as gone: its JVM has exited.
        if Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1].startswith("Z"):
            return False
    return True
