"""Run the REST catalog: bind, print where, serve with uvicorn until SIGTERM/SIGINT.

The socket is bound here (``port: 0`` picks a free port) and its address printed as the first
line of stdout, ``mixed-iceberg serve: listening on http://<host>:<port>``, so a supervisor
(the test fixture ``tests/support/rest_server.py``) learns the port without guessing. Every
secret (tokens, client secrets, the catalogs' storage keys and database passwords) is masked in
every log record of the process (:class:`SecretFilter`).
"""

from __future__ import annotations

import importlib.util
import logging
import re
import socket
import sys
from typing import Any

import uvicorn
from starlette.applications import Starlette
from uvicorn.supervisors import Multiprocess

from mixed_iceberg.service.app import create_app
from mixed_iceberg.service.catalogs import ServedCatalogs
from mixed_iceberg.service.settings import ServiceConfig

__all__ = ["SecretFilter", "WorkerApp", "serve", "uvicorn_parts"]

log = logging.getLogger(__name__)


#: How long uvicorn's supervisor waits for a worker's answer to its health-check ping before it
#: kills the worker as hung (``workers`` > 1). uvicorn's 5 s killed workers that were only busy
#: on a loaded machine, and with them the commits they were making.
WORKER_HEALTHCHECK_S = 60


def uvicorn_parts() -> dict[str, Any]:
    """uvicorn's options for the HTTP parser and event loop: httptools (llhttp, in C) where
    installed (a declared dependency), asyncio's loop. With h11's pure-Python parser, parsing
    requests and sending answers took more of serve's time per commit than the catalog's own work
    (py-spy over ``bench.rest_commit_profile``). Not uvloop: it gained little over httptools alone."""
    return {"http": "httptools" if importlib.util.find_spec("httptools") is not None else "h11", "loop": "asyncio"}


class SecretFilter(logging.Filter):
    """Replaces every configured secret in a log record's message with ``***``."""

    def __init__(self, secrets: list[str]) -> None:
        super().__init__()
        found = sorted({s for s in secrets if s}, key=len, reverse=True)
        # Whole values only: a short token must not mask part of an ordinary word ("tok" in "tokens").
        self._pattern = re.compile("|".join(rf"(?<![\w.~+/=-]){re.escape(s)}(?![\w.~+/=-])" for s in found)) if found else None

    def filter(self, record: logging.LogRecord) -> bool:
        if self._pattern is not None:
            message = record.getMessage()
            masked = self._pattern.sub("***", message)
            if masked != message:
                record.msg, record.args = masked, None
        return True


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP explicitly: asyncio sets TCP_NODELAY only on sockets whose proto says TCP, and
    # without it a response's headers and body (two writes) wait on the client's delayed ACK (40 ms).
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def _redacted(config: ServiceConfig, catalogs: ServedCatalogs) -> None:
    redact = SecretFilter([*config.secrets(), *catalogs.secrets()])
    for handler in logging.getLogger().handlers:
        handler.addFilter(redact)
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        logging.getLogger(name).addFilter(redact)


class WorkerApp:
    """The app factory of one worker process (``workers`` > 1): uvicorn's supervisor hands it
    to each process it spawns (pickled with the config, never through the environment), and
    each builds its own app and opens its own catalogs. Workers share nothing but the socket
    and the catalogs' databases: the catalog's compare-and-set is the only lock, as between
    separate ``serve`` processes, and issued tokens are checked without state (:mod:`.auth`)."""

    def __init__(self, config: ServiceConfig) -> None:
        self.config = config

    def __call__(self) -> Starlette:
        if not logging.getLogger().handlers:  # a spawned process: the CLI's logging set-up did not run
            logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
        catalogs = ServedCatalogs(self.config.catalogs_file, self.config.default_catalog)
        _redacted(self.config, catalogs)
        return create_app(self.config, catalogs)


def serve(config: ServiceConfig) -> int:
    """Serve until stopped; the exit code.

    One process serves every request unless ``workers`` > 1: then uvicorn's supervisor runs that
    many worker processes on the one socket (and replaces one that dies), so commits use every
    core (a Python process serialises its CPU work).

    Raises:
        ConfigError: a non-loopback host without tokens, or a catalogs file without sql catalogs.
    """
    config.check_bind()
    catalogs = ServedCatalogs(config.catalogs_file, config.default_catalog)
    _redacted(config, catalogs)
    sock = _bind(config.host, config.port)
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    print(f"mixed-iceberg serve: listening on http://{shown}:{port}", flush=True)
    log.info(
        "serving %s on http://%s:%d (tokens %s; http %s, loop %s)",
        sorted(catalogs.catalogs),
        shown,
        port,
        "required" if config.auth_required else "off",
        *uvicorn_parts().values(),
    )
    if config.workers > 1:
        factory = uvicorn.Config(
            WorkerApp(config),
            factory=True,
            workers=config.workers,
            timeout_worker_healthcheck=WORKER_HEALTHCHECK_S,
            log_level="warning",
            access_log=False,
            lifespan="off",
            **uvicorn_parts(),
        )
        Multiprocess(factory, sockets=[sock]).run()
    else:
        app = create_app(config, catalogs)  # workers build their own (WorkerApp)
        server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off", **uvicorn_parts()))
        server.run(sockets=[sock])
    sys.stdout.flush()
    return 0
