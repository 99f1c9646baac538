"""Which TCP ports a process tree listens on, and on which addresses, read from ``/proc``.

``/proc/<pid>/net/tcp`` and ``tcp6`` list every socket of the process's network namespace with
its inode; ``/proc/<pid>/fd`` links name the inodes each process holds. A listener belongs to
every process holding its inode, so a JVM's sockets are found through the JVM, a forked worker's
through the worker. :class:`ListenerWatch` samples a tree while it runs, since a job's
processes come and go (Python workers start well after the client), and exempts nothing: Beam's
Fn API servers too listen on loopback, moved there by the loopback agent (java/loopback-agent/);
:func:`assert_loopback_only` checks a running service of ``scripts/services/``.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import re
import socket
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from tests.support.services import ServiceScript

__all__ = [
    "Listener",
    "ListenerWatch",
    "assert_loopback_only",
    "beam_workers",
    "listeners",
    "outside_loopback",
    "port_owners",
    "process_tree",
    "service_pids",
    "speaks_http2",
]

_LISTEN = "0A"


@dataclass(frozen=True, slots=True)
class Listener:
    """One listening socket: the address it is bound to, its port, and a process holding it."""

    address: str
    port: int
    pid: int
    command: str

    @property
    def loopback(self) -> bool:
        address = ipaddress.ip_address(self.address)
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
            address = address.ipv4_mapped
        return address.is_loopback

    def __str__(self) -> str:
        host = f"[{self.address}]" if ":" in self.address else self.address
        return f"{host}:{self.port} (pid {self.pid}: {self.command[:120]})"


def _children() -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            fields = stat.read_text().rsplit(")", 1)[1].split()
            children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    return children


def process_tree(roots: Iterable[int]) -> list[int]:
    """``roots`` and all their descendants that are alive now."""
    children = _children()
    found: list[int] = []
    pending = [pid for pid in roots if Path(f"/proc/{pid}").exists()]
    while pending:
        pid = pending.pop()
        if pid not in found:
            found.append(pid)
            pending.extend(children.get(pid, []))
    return found


def command_line(pid: int) -> str:
    with contextlib.suppress(OSError):
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    return ""


def _socket_inodes(pid: int) -> set[str]:
    inodes = set()
    with contextlib.suppress(OSError):
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            with contextlib.suppress(OSError):
                target = fd.readlink().as_posix()
                if target.startswith("socket:["):
                    inodes.add(target[8:-1])
    return inodes


def _address(hex_address: str) -> str:
    raw = bytes.fromhex(hex_address)
    if len(raw) == 4:
        return str(ipaddress.IPv4Address(raw[::-1]))
    # tcp6: four 32-bit words, each in the host's (little-endian) byte order
    words = b"".join(raw[i : i + 4][::-1] for i in range(0, 16, 4))
    return str(ipaddress.IPv6Address(words))


def _listening(pid: int) -> dict[str, tuple[str, int]]:
    """inode -> (address, port) of every listening TCP socket in ``pid``'s network namespace."""
    found = {}
    for table in ("tcp", "tcp6"):
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]:
                fields = line.split()
                if fields[3] == _LISTEN:
                    host, port = fields[1].split(":")
                    found[fields[9]] = (_address(host), int(port, 16))
    return found


def listeners(pids: Iterable[int]) -> set[Listener]:
    """Every listening TCP socket held by one of ``pids``."""
    found = set()
    for pid in pids:
        inodes = _socket_inodes(pid)
        if not inodes:
            continue
        command = command_line(pid)
        for inode, (address, port) in _listening(pid).items():
            if inode in inodes:
                found.add(Listener(address, port, pid, command))
    return found


def speaks_http2(port: int, timeout: float = 3.0) -> bool:
    """Whether the server on 127.0.0.1:``port`` answers an HTTP/2 connection preface (prior
    knowledge, as gRPC clients connect) with a SETTINGS frame: a gRPC server."""
    preface = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes([0, 0, 0, 4, 0, 0, 0, 0, 0])  # + an empty SETTINGS frame
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as connection:
            connection.sendall(preface)
            header = b""
            while len(header) < 9:
                chunk = connection.recv(9 - len(header))
                if not chunk:
                    return False
                header += chunk
    except OSError:
        return False
    return header[3] == 4  # frame type 4: SETTINGS


_BEAM_WORKER = "pyflink.fn_execution.beam.beam_boot"


def _parents() -> dict[int, int]:
    return {child: parent for parent, children in _children().items() for child in children}


def beam_workers(pids: Iterable[int]) -> dict[int, set[int]]:
    """The PyFlink Python workers in process mode (``beam_boot``) among ``pids``, by the JVM that
    started them (their nearest ``java`` ancestor: the Python operator's JVM, which holds the
    six Fn API servers each worker connects to: control, data, state, logging, provisioning,
    artifacts)."""
    parents = _parents()
    found: dict[int, set[int]] = {}
    for pid in pids:
        if _BEAM_WORKER not in command_line(pid):
            continue
        ancestor = parents.get(pid)
        while ancestor is not None and Path(command_line(ancestor).split(" ", 1)[0]).name != "java":
            ancestor = parents.get(ancestor)
        if ancestor is not None:
            found.setdefault(ancestor, set()).add(pid)
    return found


def port_owners(port: int) -> list[int]:
    """The processes holding a listening socket on ``port`` (any address) in this network namespace."""
    inodes = {inode for inode, (_, p) in _listening(os.getpid()).items() if p == port}
    if not inodes:
        return []
    return sorted(int(d.name) for d in Path("/proc").glob("[0-9]*") if inodes & _socket_inodes(int(d.name)))


def outside_loopback(found: Iterable[Listener]) -> list[Listener]:
    return sorted((listener for listener in found if not listener.loopback), key=lambda x: (x.pid, x.port))


class ListenerWatch:
    """Samples the listeners of the trees under ``roots()`` every ``interval`` seconds in a thread,
    from ``start()`` to ``stop()``; ``seen`` holds every listener found, :meth:`exposed` those
    outside loopback, and there is no exemption.

    Beam's Fn API servers, which a JVM running PyFlink Python workers in process mode starts for
    them, were one until the loopback agent (java/loopback-agent/) moved them: flink-python 2.2.1
    binds them to the wildcard address whatever Flink is told (docs/ingest.md, "Network
    exposure"). ``workers`` records which JVMs ran workers during the watch, so a test can tell
    that such servers existed while nothing listened beyond loopback; a listener outside loopback
    that answers an HTTP/2 preface is marked as gRPC in :meth:`report`."""

    def __init__(self, roots: Callable[[], Iterable[int]], interval: float = 1.0) -> None:
        self._roots = roots
        self._interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="listener-watch", daemon=True)
        self.seen: set[Listener] = set()
        self.grpc: set[Listener] = set()
        self.workers: dict[int, set[int]] = {}  # a JVM -> the Python workers it started
        self.commands: dict[int, str] = {}  # every process seen, while it lived
        self.parents: dict[int, int] = {}
        self.samples = 0

    def sample(self) -> None:
        tree = process_tree(self._roots())
        found = listeners(tree)
        new = found - self.seen
        self.seen |= found
        # Probed when first seen, while it still listens; whether its process runs Python workers
        # is decided at the end (they start after the JVM's servers).
        self.grpc |= {listener for listener in new if not listener.loopback and speaks_http2(listener.port)}
        for pid, workers in beam_workers(tree).items():
            self.workers.setdefault(pid, set()).update(workers)
        parents = _parents()
        for pid in tree:
            self.commands.setdefault(pid, command_line(pid))
            if pid in parents:
                self.parents.setdefault(pid, parents[pid])
        self.samples += 1

    def _run(self) -> None:
        while not self._stop.is_set():
            with contextlib.suppress(OSError, ValueError):
                self.sample()
            self._stop.wait(self._interval)

    def start(self) -> ListenerWatch:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)

    @contextlib.contextmanager
    def running(self) -> Iterator[ListenerWatch]:
        self.start()
        try:
            yield self
        finally:
            self.stop()

    def exposed(self) -> list[Listener]:
        """Every listener seen outside loopback."""
        return outside_loopback(self.seen)

    def report(self) -> str:
        """The exposed listeners, one a line; a gRPC one in a JVM that ran Python workers is named
        as Beam's (whose JVM did not load the loopback agent, or an agent that did not match)."""
        lines = []
        for listener in self.exposed():
            kind = ""
            if listener in self.grpc:
                kind = "gRPC, Beam's Fn API? (is the loopback agent loaded?): " if listener.pid in self.workers else "gRPC: "
            lines.append(f"{kind}{listener}")
        return "listening beyond loopback:\n" + "\n".join(lines)


def service_pids(service: ServiceScript) -> list[int]:
    """The service's processes: the PIDs its ``status`` prints, else the owner of its port."""
    status = service.run("status").stdout
    pids = re.search(r"running pids? ((?:\d+ ?)+)", status)
    if pids:
        return [int(pid) for pid in pids[1].split()]
    port = urlsplit(service.address()).port
    assert port is not None, status
    return port_owners(port)


def service_listeners(service: ServiceScript) -> set[Listener]:
    """Every socket the service's process tree listens on; fails if it has none (not found)."""
    pids = process_tree(service_pids(service))
    found = listeners(pids)
    assert found, f"{service.name}: no listening socket found for pids {pids}"
    return found


def assert_loopback_only(service: ServiceScript) -> None:
    found = service_listeners(service)
    exposed = outside_loopback(found)
    assert exposed == [], f"{service.name} listens beyond loopback:\n" + "\n".join(map(str, exposed))
