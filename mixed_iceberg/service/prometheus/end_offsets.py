"""The end offsets of the ingest jobs' source topics, for the metrics' ingest lag.

``serve`` reaches the source topics' Kafka cluster when ``service.yaml`` names it
(``kafka-bootstrap-servers``) and the kafka extra is installed; otherwise the lag is not exported
(the committed offsets, the age of the last commit and the freshness still are). Each scrape asks
for the topics its tables' ingest commits name, with a short timeout: a cluster that does not
answer costs the scrape at most that, and the lag of its topics is left out, with a warning.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from mixed_iceberg.exceptions import MixedIcebergError

__all__ = ["TIMEOUT_SECONDS", "EndOffsets"]

log = logging.getLogger(__name__)

#: The longest one scrape waits for one topic's end offsets.
TIMEOUT_SECONDS = 2.0


class EndOffsets:
    """``{(topic, partition): end offset}`` of a Kafka cluster; not thread-safe (the collector locks)."""

    def __init__(self, bootstrap: str | None) -> None:
        self.bootstrap = bootstrap
        self._client: Any = None
        self._unavailable = bootstrap is None

    def of(self, topics: Iterable[str]) -> dict[tuple[str, int], int] | None:
        """The end offsets of ``topics`` (None: no cluster to ask)."""
        client = self._kafka()
        if client is None:
            return None
        ends: dict[tuple[str, int], int] = {}
        for topic in sorted(set(topics)):
            try:
                marks = client.watermarks(topic)
            except (MixedIcebergError, OSError) as exc:
                log.warning("metrics: no end offsets of topic %s on %s: %s", topic, self.bootstrap, exc)
                continue
            ends.update({(topic, partition): high for partition, (_, high) in marks.items()})
        return ends

    def _kafka(self) -> Any:
        if self._client is None and not self._unavailable:
            try:
                from mixed_iceberg.logstore.kafka import KafkaLogStore
                from mixed_iceberg.logstore.retry import RetryPolicy
            except ImportError as exc:  # the kafka extra is not installed
                log.warning("metrics: no ingest lag: %s (install mixed-iceberg[kafka])", exc)
                self._unavailable = True
                return None
            assert self.bootstrap is not None
            self._client = KafkaLogStore(self.bootstrap, retry=RetryPolicy(timeout=TIMEOUT_SECONDS))
        return self._client
