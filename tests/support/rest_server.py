"""A live ``mixed-iceberg serve`` process for integration tests (and the other REST helpers).

    server = RestServer.start(tmp_path)                       # a fresh SQLite catalog under tmp_path
    server = RestServer.start(tmp_path, tokens=["s3cr3t"])    # bearer tokens required
    server = RestServer.start(tmp_path, credentials={"app": "secret"})   # OAuth2 client credentials
    server = RestServer.start(tmp_path, catalogs_yaml=path)   # your own catalogs file
    server.uri, server.warehouse, server.token                # for any REST client
    RestCatalog("c", **server.pyiceberg_properties())         # pyiceberg
    server.stop()

:func:`rest_server` is a session-scoped fixture over one such server (no tokens, its own
catalog); a test module imports it (``from tests.support.rest_server import rest_server``).
The process prints its address on its first stdout line; ``start`` reads it and then polls
``/v1/config`` until it answers, so nothing sleeps. Its stdout and stderr go to
``<home>/serve.log`` (named in errors).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.support.services import ROOT

__all__ = ["RestServer", "rest_server", "write_catalogs"]

_LISTENING = re.compile(r"listening on (http://\S+)")


def write_catalogs(home: Path, *, name: str = "local", warehouse: Path | None = None) -> Path:
    """A catalogs file with one SQLite catalog ``name`` under ``home`` (warehouse: ``home/warehouse``)."""
    home.mkdir(parents=True, exist_ok=True)
    warehouse = warehouse or home / "warehouse"
    warehouse.mkdir(parents=True, exist_ok=True)
    path = home / "catalogs.yaml"
    path.write_text(
        json.dumps(
            {
                "catalogs": [
                    {
                        "name": name,
                        "type": "sql",
                        "properties": {"uri": f"sqlite:///{home / 'catalog.db'}", "warehouse": str(warehouse)},
                    }
                ]
            }
        )
    )
    return path


@dataclass
class RestServer:
    """One running ``serve`` process."""

    uri: str
    warehouse: str
    home: Path
    process: subprocess.Popen[bytes]
    token: str | None = None
    credential: str | None = None
    log: Path = field(default_factory=Path)

    @classmethod
    def start(
        cls,
        home: Path,
        *,
        catalogs_yaml: Path | None = None,
        warehouse: str | None = None,
        tokens: Sequence[str] = (),
        credentials: Mapping[str, str] | None = None,
        max_body_bytes: int | None = None,
        workers: int = 1,
        kafka_bootstrap: str | None = None,
        env: Mapping[str, str] | None = None,
        timeout: float = 60.0,
    ) -> RestServer:
        """Start ``mixed-iceberg serve`` over ``catalogs_yaml`` (default: a fresh SQLite catalog
        ``local`` under ``home``); ``warehouse``: the catalog clients name (default: its first)."""
        home.mkdir(parents=True, exist_ok=True)
        catalogs_yaml = catalogs_yaml or write_catalogs(home)
        config: dict[str, object] = {"host": "127.0.0.1", "port": 0, "catalogs-file": str(catalogs_yaml)}
        if max_body_bytes is not None:
            config["max-body-bytes"] = max_body_bytes
        if workers > 1:
            config["workers"] = workers
        if kafka_bootstrap is not None:
            config["kafka-bootstrap-servers"] = kafka_bootstrap
        service_yaml = home / "service.yaml"
        service_yaml.write_text(json.dumps(config))
        environment = {**os.environ, **(env or {}), "MIXED_ICEBERG_HOME": str(home)}
        environment["MIXED_ICEBERG_REST_TOKENS"] = ",".join(tokens)
        environment["MIXED_ICEBERG_REST_CREDENTIALS"] = ",".join(f"{k}:{v}" for k, v in (credentials or {}).items())
        log = home / "serve.log"
        with log.open("wb") as out:
            process = subprocess.Popen(
                [sys.executable, "-m", "mixed_iceberg.cli.main", "serve", "--config", str(service_yaml)],
                stdout=out,
                stderr=subprocess.STDOUT,
                cwd=ROOT,
                env=environment,
            )
        deadline = time.monotonic() + timeout
        uri = None
        while uri is None:
            found = _LISTENING.search(log.read_text(errors="replace"))
            if found:
                uri = found.group(1)
            elif process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                raise RuntimeError(f"serve did not start (exit {process.poll()}); its log {log}:\n{log.read_text()}")
            else:
                time.sleep(0.05)
        first = next(iter(credentials or {}), None)
        server = cls(
            uri=uri,
            warehouse=warehouse or _first_catalog(catalogs_yaml),
            home=home,
            process=process,
            token=tokens[0] if tokens else None,
            credential=f"{first}:{(credentials or {})[first]}" if first else None,
            log=log,
        )
        server._wait_ready(deadline)
        return server

    def _wait_ready(self, deadline: float) -> None:
        request = urllib.request.Request(f"{self.uri}/v1/config?warehouse={self.warehouse}")
        if self.token:
            request.add_header("Authorization", f"Bearer {self.token}")
        while True:
            try:
                with urllib.request.urlopen(request, timeout=5):
                    return
            except urllib.error.HTTPError as exc:
                if exc.code in (401, 403):  # answering: only credentials are configured
                    return
                raise RuntimeError(f"serve answered /v1/config with {exc.code}; log {self.log}:\n{self.log.read_text()}") from exc
            except OSError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"serve is not answering; log {self.log}:\n{self.log.read_text()}") from None
                time.sleep(0.05)

    def pyiceberg_properties(self) -> dict[str, str]:
        """Properties of a pyiceberg ``RestCatalog`` on this server (its token, if any)."""
        properties = {"uri": self.uri, "warehouse": self.warehouse}
        if self.token:
            properties["token"] = self.token
        elif self.credential:
            properties["credential"] = self.credential
            properties["oauth2-server-uri"] = f"{self.uri}/v1/oauth/tokens"
        return properties

    def stop(self) -> None:
        """Stop the process (SIGTERM, then SIGKILL after 10 s)."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def _first_catalog(path: Path) -> str:
    import yaml

    document = yaml.safe_load(path.read_text())
    return str(document["catalogs"][0]["name"])


@pytest.fixture(scope="session")
def rest_server() -> Iterator[RestServer]:
    """One ``serve`` process for the session, over a fresh SQLite catalog ``local``."""
    with tempfile.TemporaryDirectory(prefix="mixed-iceberg-rest-") as home:
        server = RestServer.start(Path(home))
        try:
            yield server
        finally:
            server.stop()
