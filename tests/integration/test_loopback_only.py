"""The services the scripts start (``scripts/services/*.sh``) listen on loopback only.

Kafka, PostgreSQL and SeaweedFS are the session's own (tests/conftest.py); Kafka Connect is
checked in ``test_debezium_postgres.py`` and the Flink session cluster in
``test_flink_cluster_ingest.py``, where those services run anyway. The jobs' own mini-clusters
are checked while ``make demo`` runs them (``test_make_targets.py``).
"""

from __future__ import annotations

import pytest

from tests.support.services import KAFKA, POSTGRES, SEAWEEDFS, ServiceScript
from tests.support.sockets import assert_loopback_only

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("service", [KAFKA, POSTGRES, SEAWEEDFS], ids=lambda s: s.name)
def test_session_services_listen_on_loopback_only(
    service: ServiceScript, kafka_bootstrap: str, postgres_url: str, s3_endpoint: object
) -> None:
    assert_loopback_only(service)
