"""Iceberg's reference REST catalog server, run as an independent server for tests and benchmarks.

The server is Iceberg's own REST route handling (``RESTCatalogAdapter`` and ``RESTCatalogServlet``
from iceberg-core's test jar, what ``RESTCatalogServer`` of iceberg-open-api's test fixtures
serves) over a JDBC catalog on a SQLite file, in one JVM started by
``java/rest-reference``'s launcher, which binds Jetty to 127.0.0.1 (``RESTCatalogServer`` itself
binds every interface). The JVM takes port 0 and prints the port it got, so two sessions never
race for a port. The jars come from Maven Central through ``scripts/jars/rest.sh``.

    with reference_server(tmp_path) as server:
        catalog = RestCatalog("ref", uri=server.uri)

The catalog name and the SQLite file can be given, so the server can serve the very database a
:class:`pyiceberg.catalog.sql.SqlCatalog` of the same name writes (Iceberg's ``JdbcCatalog`` with
schema version V1 reads pyiceberg's layout).
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.support.services import ROOT

__all__ = ["ReferenceServer", "ReferenceServerError", "RestJars", "reference_server", "rest_jars", "start_reference_server"]

_LAUNCHER_CLASS = "mixediceberg.rest.LoopbackRestCatalogServer"
_SERVING = re.compile(r"LoopbackRestCatalogServer: serving catalog \S+ on (http://[\d.]+:\d+)/")


class ReferenceServerError(RuntimeError):
    """The reference server could not be fetched, built or started; the message carries its log."""


@dataclass(frozen=True, slots=True)
class RestJars:
    """The kit's and the server's jars (``jars``) and the loopback launcher (``launcher``)."""

    directory: Path
    launcher: Path

    @property
    def jars(self) -> list[Path]:
        return sorted(self.directory.glob("*.jar"))

    def classpath(self, *, with_launcher: bool = True, with_console: bool = True) -> str:
        parts = [j for j in self.jars if with_console or not j.name.startswith("junit-platform-console-standalone")]
        if with_launcher:
            parts.append(self.launcher)
        return os.pathsep.join(str(p) for p in parts)

    @property
    def console_launcher(self) -> Path:
        found = sorted(self.directory.glob("junit-platform-console-standalone-*.jar"))
        if not found:
            raise ReferenceServerError(f"expected JUnit's console launcher in {self.directory}, found none")
        return found[-1]


def rest_jars() -> RestJars:
    """Fetch (first use) and locate the jars of ``scripts/jars/rest.sh``."""
    script = ROOT / "scripts" / "jars" / "rest.sh"
    proc = subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=900, check=False, cwd=ROOT)
    if proc.returncode != 0:
        raise ReferenceServerError(f"{script.name}: expected exit status 0, found {proc.returncode}\n{proc.stderr}")
    directory = Path(proc.stdout.strip().splitlines()[-1])
    launcher = directory.parent / f"{directory.name}-launcher" / "mixed-iceberg-rest-reference.jar"
    found = RestJars(directory, launcher)
    if not launcher.is_file() or len(found.jars) < 10:
        raise ReferenceServerError(f"{script.name}: expected the kit's jars and the launcher in {directory}, found {found.jars}")
    return found


@dataclass(slots=True)
class ReferenceServer:
    """A running reference server: its base ``uri`` (no trailing slash), catalog and files."""

    uri: str
    catalog_name: str
    sqlite_db: Path
    warehouse: Path
    log: Path
    process: subprocess.Popen[bytes]

    @property
    def pid(self) -> int:
        return self.process.pid

    def stop(self, timeout: float = 20.0) -> None:
        """SIGTERM (Jetty stops at JVM shutdown), then SIGKILL if the JVM outlives ``timeout``."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout)


def _config_answers(uri: str) -> bool:
    try:
        with urllib.request.urlopen(f"{uri}/v1/config", timeout=2) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def start_reference_server(
    directory: Path,
    *,
    catalog_name: str = "reference",
    sqlite_db: Path | None = None,
    warehouse: Path | None = None,
    startup_timeout: float = 120.0,
) -> ReferenceServer:
    """Start the server with its SQLite catalog and warehouse under ``directory`` (unless given)
    and return once ``/v1/config`` answers; raises :class:`ReferenceServerError` with the JVM's
    log if it exits or does not answer within ``startup_timeout`` seconds."""
    jars = rest_jars()
    directory.mkdir(parents=True, exist_ok=True)
    sqlite_db = sqlite_db or directory / "catalog.db"
    warehouse = warehouse or directory / "warehouse"
    warehouse.mkdir(parents=True, exist_ok=True)
    log = directory / "reference-server.log"
    command = [
        "java",
        "-Xmx512m",
        "-XX:+UseSerialGC",
        "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
        "-cp",
        jars.classpath(with_console=False),
        _LAUNCHER_CLASS,
        "rest.port=0",
        f"catalog.name={catalog_name}",
        f"uri=jdbc:sqlite:{sqlite_db}",
        f"warehouse={warehouse.as_uri()}",
    ]
    with log.open("wb") as sink:
        process = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=directory)
    deadline = time.monotonic() + startup_timeout
    uri = None
    while time.monotonic() < deadline and process.poll() is None:
        if uri is None:
            found = _SERVING.search(log.read_text(errors="replace"))
            uri = found[1] if found else None
        if uri is not None and _config_answers(uri):
            return ReferenceServer(uri, catalog_name, sqlite_db, warehouse, log, process)
        time.sleep(0.1)
    server = ReferenceServer(uri or "", catalog_name, sqlite_db, warehouse, log, process)
    server.stop()
    raise ReferenceServerError(
        f"reference server: expected /v1/config to answer within {startup_timeout:.0f} s, "
        f"found exit status {process.returncode}\n{log.read_text(errors='replace')[-4000:]}"
    )


@contextlib.contextmanager
def reference_server(
    directory: Path, *, catalog_name: str = "reference", sqlite_db: Path | None = None, warehouse: Path | None = None
) -> Iterator[ReferenceServer]:
    """:func:`start_reference_server` for the block; the JVM is stopped after it."""
    server = start_reference_server(directory, catalog_name=catalog_name, sqlite_db=sqlite_db, warehouse=warehouse)
    try:
        yield server
    finally:
        server.stop()
