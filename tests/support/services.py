"""Real services for the integration tests, started through ``scripts/services/*.sh``.

A test session *leases* a service: the first lease starts it (if it is not already running),
the last lease stops it again, but only if a test session started it; a service someone started
by hand is left running. Leases are files named after the holder's PID under
``.services/sessions/<service>/``, so concurrent sessions in one checkout share the service and a
crashed session's lease is ignored. ``python -m tests.support.services reap`` stops what crashed
sessions left behind (``scripts/test.sh`` calls it on exit).
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "CONNECT",
    "FLINK",
    "KAFKA",
    "POSTGRES",
    "ROOT",
    "SEAWEEDFS",
    "S3Endpoint",
    "ServiceError",
    "ServiceScript",
    "exported",
    "s3_endpoint_from",
]

logger = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parents[2]


class ServiceError(RuntimeError):
    """A service script failed; the message carries its output."""


@dataclass(frozen=True, slots=True)
class S3Endpoint:
    """Where the S3 server listens and how to sign requests to it."""

    url: str
    access_key: str
    secret_key: str
    bucket: str
    region: str = "us-east-1"

    def __post_init__(self) -> None:
        if not self.url.startswith(("http://", "https://")):
            raise ValueError(f"expected an http(s) URL for the S3 endpoint, found {self.url!r}")

    @property
    def host_port(self) -> str:
        """``127.0.0.1:8333`` (what DuckDB and pyarrow take as the endpoint)."""
        return self.url.split("://", 1)[1].rstrip("/")

    def warehouse(self, *parts: str) -> str:
        """An ``s3://`` location inside the bucket, e.g. ``warehouse('wh', 'abc')``."""
        return "/".join([f"s3://{self.bucket}", *(p.strip("/") for p in parts)])

    def pyiceberg_properties(self) -> dict[str, str]:
        """Catalog properties for pyiceberg's S3 FileIO."""
        return {
            "s3.endpoint": self.url,
            "s3.access-key-id": self.access_key,
            "s3.secret-access-key": self.secret_key,
            "s3.region": self.region,
        }


def s3_endpoint_from(url: str) -> S3Endpoint:
    """The endpoint at ``url`` with the credentials the SeaweedFS script configures."""
    return S3Endpoint(
        url=url,
        access_key=os.environ.get("AWS_ACCESS_KEY_ID", "admin"),
        secret_key=os.environ.get("AWS_SECRET_ACCESS_KEY", "adminsecret"),
        bucket=os.environ.get("MIXED_ICEBERG_S3_BUCKET", "warehouse"),
        region=os.environ.get("AWS_REGION", "us-east-1"),
    )


@contextlib.contextmanager
def exported(name: str, value: str) -> Iterator[None]:
    """Sets environment variable ``name`` for the block, restoring the previous value after."""
    previous = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = previous


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, owned by someone else
        return True
    return True


@dataclass(frozen=True, slots=True)
class ServiceScript:
    """One ``scripts/services/<name>.sh`` and the leases held on it.

    Args:
        name: the script's base name, also the state directory's name.
        address_command: the script command that prints the address (URL) of the service.
        start_timeout: seconds allowed for ``start`` (PostgreSQL may need an apt-get install).
    """

    name: str
    address_command: str
    start_timeout: float = 120.0

    @property
    def script(self) -> Path:
        return ROOT / "scripts" / "services" / f"{self.name}.sh"

    @property
    def _sessions(self) -> Path:
        return Path(os.environ.get("MIXED_ICEBERG_SERVICES_DIR", ROOT / ".services")) / "sessions" / self.name

    def run(self, command: str, *, timeout: float = 60.0, check: bool = True) -> subprocess.CompletedProcess[str]:
        """Runs ``<script> <command>``; raises ServiceError when it fails and ``check`` is set."""
        proc = subprocess.run(
            ["bash", str(self.script), command],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            cwd=ROOT,
        )
        for line in proc.stderr.splitlines():
            logger.info("%s", line)
        if check and proc.returncode != 0:
            raise ServiceError(
                f"{self.script.name} {command}: expected exit status 0, found {proc.returncode}\n{proc.stderr}{proc.stdout}"
            )
        return proc

    def is_running(self) -> bool:
        return self.run("status", check=False).returncode == 0

    def address(self) -> str:
        return self.run(self.address_command).stdout.strip().splitlines()[-1]

    @contextlib.contextmanager
    def _locked(self) -> Iterator[Path]:
        self._sessions.mkdir(parents=True, exist_ok=True)
        with (self._sessions / ".lock").open("a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield self._sessions
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def _live_leases(self, sessions: Path) -> list[int]:
        pids = []
        for lease in sessions.glob("lease-*"):
            pid = int(lease.name.removeprefix("lease-"))
            if _pid_alive(pid):
                pids.append(pid)
            else:
                lease.unlink(missing_ok=True)
        return pids

    def acquire(self) -> str:
        """Takes a lease for this process, starting the service if needed; returns its address."""
        with self._locked() as sessions:
            owned = sessions / "started-by-tests"
            if self.is_running():
                if not self._live_leases(sessions) and not owned.exists():
                    logger.info("%s was already running; it will be left running", self.name)
            else:
                started = time.monotonic()
                self.run("start", timeout=self.start_timeout)
                owned.touch()
                logger.info("%s started in %.1f s", self.name, time.monotonic() - started)
            (sessions / f"lease-{os.getpid()}").touch()
            return self.address()

    def release(self) -> None:
        """Drops this process's lease; the last lease stops a service that tests started."""
        with self._locked() as sessions:
            (sessions / f"lease-{os.getpid()}").unlink(missing_ok=True)
            self._stop_if_unleased(sessions)

    def reap(self) -> None:
        """Stops the service if tests started it and no live session holds a lease."""
        with self._locked() as sessions:
            self._stop_if_unleased(sessions)

    def _stop_if_unleased(self, sessions: Path) -> None:
        owned = sessions / "started-by-tests"
        if self._live_leases(sessions) or not owned.exists():
            return
        self.run("stop")
        owned.unlink(missing_ok=True)

    @contextlib.contextmanager
    def leased(self) -> Iterator[str]:
        """``with SERVICE.leased() as address:`` holds a lease for the block."""
        address = self.acquire()
        try:
            yield address
        finally:
            self.release()


POSTGRES = ServiceScript("postgres", "url", start_timeout=600.0)
SEAWEEDFS = ServiceScript("seaweedfs", "endpoint")
# The first start may fetch the broker and Flink connector jars from Maven Central.
KAFKA = ServiceScript("kafka", "bootstrap", start_timeout=600.0)
# A standalone session cluster from PyFlink's distribution (may fetch the connector jar too).
FLINK = ServiceScript("flink", "rest", start_timeout=600.0)
# A Kafka Connect worker with Debezium's PostgreSQL connector (may fetch its jars first); it
# writes to the broker MIXED_ICEBERG_KAFKA_BOOTSTRAP names, so lease KAFKA first.
CONNECT = ServiceScript("connect", "url", start_timeout=600.0)


def main(argv: list[str]) -> int:
    """``python -m tests.support.services reap``: stop services left by crashed sessions."""
    if argv != ["reap"]:
        print("usage: python -m tests.support.services reap", file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    for service in (CONNECT, POSTGRES, SEAWEEDFS, KAFKA, FLINK):
        service.reap()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
