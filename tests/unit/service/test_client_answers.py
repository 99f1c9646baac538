"""Our REST client's parse of a table answer reuses the snapshots it already holds and must
still equal pyiceberg's own parse of the whole answer (``_pyiceberg/rest_catalog.py``)."""

from __future__ import annotations

from pyiceberg.catalog.rest import TableResponse
from starlette.testclient import TestClient

from mixed_iceberg._pyiceberg.rest_catalog import parse_answer
from tests.unit.service.conftest import PREFIX, create_table
from tests.unit.service.test_commits import add_snapshot

URL = f"{PREFIX}/namespaces/db/tables/t"


def test_an_answer_parsed_with_known_snapshots_equals_pyicebergs_parse(client: TestClient) -> None:
    create_table(client)
    parent = add_snapshot(client, "t", parent=None)
    parent = add_snapshot(client, "t", parent=parent)
    before = TableResponse.model_validate_json(client.get(URL).text)
    add_snapshot(client, "t", parent=parent)
    text = client.get(URL).text

    parsed = parse_answer(text, before.metadata)

    assert parsed == TableResponse.model_validate_json(text)
    assert len(parsed.metadata.snapshots) == 3
    kept = {id(snapshot) for snapshot in before.metadata.snapshots}
    assert [id(snapshot) in kept for snapshot in parsed.metadata.snapshots] == [True, True, False]


def test_an_answer_without_known_snapshots_is_pyicebergs_parse(client: TestClient) -> None:
    create_table(client)
    empty = TableResponse.model_validate_json(client.get(URL).text)
    add_snapshot(client, "t", parent=None)
    text = client.get(URL).text
    for known in (None, empty.metadata):
        assert parse_answer(text, known) == TableResponse.model_validate_json(text)
