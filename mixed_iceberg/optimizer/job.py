"""``python jobs/optimizer_job.py --config conf/optimizer.yaml --group default``: run one optimizer group as a PyFlink job.

Locally this starts a Flink mini-cluster in the PyFlink gateway JVM. Under ``flink run -py``
the same code submits to the cluster. ``--parallelism`` is the group's execution capacity
(one optimizer per subtask), ``--threads`` the executor threads of each. ``--run-for``
(demo, tests) cancels the job after that many seconds. Without it the job runs until it is
cancelled: on a cluster there, on the local mini-cluster by SIGTERM or SIGINT to this client.
A job that fails or is cancelled otherwise ends the client with exit status 1 and its cause.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
import time
from pathlib import Path

import yaml

from mixed_iceberg.exceptions import ConfigError
from mixed_iceberg.flink_client import local_cluster_settings, loopback_agent, prepare_flink_client
from mixed_iceberg.flink_job import TERMINAL, JobClient, ended_because, job_status
from mixed_iceberg.optimizer.config import default_optimizer_config_path, load_optimizer_config

__all__ = ["main", "serve"]

log = logging.getLogger(__name__)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="The Mixed-Iceberg optimizer for one optimizer group (PyFlink).")
    parser.add_argument("--config", default=str(default_optimizer_config_path()))
    parser.add_argument("--group", default="default")
    parser.add_argument("--parallelism", type=int, default=1, help="optimizers (subtasks) of the group in this job")
    parser.add_argument("--threads", type=int, default=1, help="executor threads of each optimizer")
    parser.add_argument("--run-for", type=float, default=0.0, metavar="SECONDS", help="cancel the job after this (0: never)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        config = load_optimizer_config(args.config)
        config.group(args.group)
        if args.parallelism < 1 or args.threads < 1:
            raise ConfigError(f"--parallelism and --threads: expected >= 1, found {args.parallelism} and {args.threads}")
        raw = yaml.safe_load(Path(args.config).read_text())
        on_cli = "PYFLINK_GATEWAY_PORT" in os.environ  # under `flink run`: the cluster's configuration decides
        # Python workers in process mode, where the config asks for it locally: their Beam gRPC
        # servers go on loopback as the ingest job's do (the loopback agent in this JVM).
        process_mode = config.flink.get("python.execution-mode", "thread") == "process"
        agent = loopback_agent() if process_mode and not on_cli else None
    except ConfigError as exc:
        print(f"optimizer job: {exc}", file=sys.stderr)
        return 2
    prepare_flink_client(agent=agent)
    from mixed_iceberg.optimizer.flink import THREAD_MODE, build_pipeline, pinned_config

    pinned = pinned_config(config, raw)
    # A local mini-cluster listens on loopback only, without REST submit or cancel, and runs the
    # function in thread mode (no Beam gRPC servers: mixed_iceberg/optimizer/flink.py), unless the
    # config's `flink` settings say otherwise.
    settings = dict(config.flink) if on_cli else local_cluster_settings({**THREAD_MODE, **config.flink})
    env = build_pipeline(
        pinned, args.group, parallelism=args.parallelism, threads=args.threads, python=sys.executable, settings=settings
    )
    name = f"mixed-iceberg-optimizer-{args.group}"
    if on_cli and not args.run_for:
        env.execute(name)  # under `flink run`: the cluster runs it until it is cancelled there
        return 0
    # The local mini-cluster lives in this client: SIGTERM / SIGINT cancel the job, so that its
    # optimizers unregister (close()) instead of dying with the JVM.
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    client = env.execute_async(name)
    until = f"cancelled after {args.run_for:.0f} s" if args.run_for else "until SIGTERM"
    log.info("optimizer job %s: group %s, %d optimizer(s), %s", client.get_job_id(), args.group, args.parallelism, until)
    return serve(client, stop, args.run_for, args.group)


def serve(client: JobClient, stop: threading.Event, run_for: float, group: str) -> int:
    """Keep the job until ``stop`` is set or ``run_for`` seconds passed (0: no limit), then
    cancel it; 0. A job that ends by itself (fails, or is cancelled elsewhere) ends this client
    with its cause logged and 1, instead of leaving it up with no optimizer."""
    deadline = time.monotonic() + run_for if run_for else None
    try:
        while not stop.wait(_poll_s(deadline)):
            if deadline is not None and time.monotonic() >= deadline:
                break
            ended = ended_because(client)
            if ended is not None:
                log.error("optimizer job %s: group %s ended: %s", client.get_job_id(), group, ended)
                return 1
    finally:
        if job_status(client) not in TERMINAL:
            client.cancel().result()
    return 0


#: How often the client asks its job's status.
POLL_S = 1.0


def _poll_s(deadline: float | None) -> float:
    return POLL_S if deadline is None else max(0.0, min(POLL_S, deadline - time.monotonic()))
