"""``GET /metrics``: the Prometheus text exposition of the served catalogs and the optimizer.

Behind the same bearer-token rule as the REST routes (:mod:`mixed_iceberg.service.auth`): the
names of tables are not for everyone, and a scrape may read manifests. Prometheus sends the
token with ``authorization: {credentials_file: ...}`` in its scrape config (docs/metrics.md).
The scrape runs in a worker thread, not on the event loop, so the catalog routes keep answering.
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.metrics_core import Metric
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from mixed_iceberg.service.prometheus.collector import MetricsCollector
from mixed_iceberg.service.prometheus.families import Scrape, families

__all__ = ["PATH", "exposition", "metrics"]

PATH = "/metrics"


class _Registry:
    """What ``generate_latest`` reads: the families of one scrape."""

    def __init__(self, scrape: Scrape) -> None:
        self.scrape = scrape

    def collect(self) -> Iterator[Metric]:
        yield from families(self.scrape)


def exposition(collector: MetricsCollector) -> bytes:
    """One scrape as Prometheus text (blocking)."""
    return generate_latest(_Registry(collector.scrape()))


async def metrics(request: Request) -> Response:
    """``GET /metrics``."""
    collector: MetricsCollector = request.app.state.metrics_collector
    body = await run_in_threadpool(exposition, collector)
    return Response(body, media_type=CONTENT_TYPE_LATEST)
