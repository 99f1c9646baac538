"""``GET /metrics`` of ``mixed-iceberg serve``: Prometheus metrics under Amoro's names (docs/metrics.md).

* :mod:`.summary`: a table's figures from its metadata (what ``table_summary_*`` report);
* :mod:`.families`: every metric name, and the families of one scrape (pure);
* :mod:`.collector`: reads one scrape, summaries cached per metadata location, within a time budget;
* :mod:`.route`: the endpoint.
"""

from __future__ import annotations

from mixed_iceberg.service.prometheus.collector import MetricsCollector
from mixed_iceberg.service.prometheus.route import PATH, exposition, metrics

__all__ = ["PATH", "MetricsCollector", "exposition", "metrics"]
