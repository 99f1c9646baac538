"""pyiceberg's REST catalog, loading a table it already knows by a conditional request.

Iceberg's REST spec lets a server tag each table answer (``ETag``) and answer a load that
repeats the tag in ``If-None-Match`` with ``304 Not Modified`` and no body. pyiceberg 0.12 sends
no tag, so every refresh before a commit fetches and pydantic-parses the whole table metadata,
which grows with the snapshots. :class:`ConditionalRestCatalog` remembers the last answer per
table (its tag, parsed) and sends the tag: an unchanged table costs one bodiless round trip. A
commit's answer is remembered too, under the tag the server gave it, so the refresh that opens
the next commit of the same writer is a 304. A server without ETags behaves as before.

A writer alone on a table need not even ask: :func:`refresh_for_commit` skips the refresh when
the table's metadata is the catalog's own last answer for it and the table has been quiet (the
last load found it unchanged, and no commit since conflicted). If another writer did commit
meanwhile, the commit's requirements (``assert-ref-snapshot-id``) fail with a 409 and pyiceberg's
retry refreshes, re-runs the commit's guard (store/commit.py: the commit id, the validator) and
rebuilds: a stale head costs one retry, never a wrong commit. A conflict ends the quiet spell.

Overrides ``RestCatalog.load_table`` and ``commit_table`` (same requests, same error mapping) and
uses ``RestCatalog._session``, ``_split_identifier_for_path``, ``_response_to_table`` and
``rest._RETRY_ARGS``.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import Any, TypeVar
from urllib.request import getproxies

from pydantic_core import from_json
from pyiceberg.catalog import TOKEN
from pyiceberg.catalog.rest import (
    _RETRY_ARGS,
    AUTHORIZATION_HEADER,
    BEARER_PREFIX,
    SNAPSHOT_LOADING_MODE,
    Capability,
    Endpoints,
    RestCatalog,
    TableResponse,
)
from pyiceberg.catalog.rest.response import _handle_non_200_response
from pyiceberg.exceptions import CommitFailedException, CommitStateUnknownException, NoSuchTableError
from pyiceberg.io import FileIO
from pyiceberg.table import CommitTableRequest, CommitTableResponse, Table, TableIdentifier, TableProperties
from pyiceberg.table.metadata import TableMetadata
from pyiceberg.table.snapshots import Snapshot
from pyiceberg.table.update import TableRequirement, TableUpdate
from pyiceberg.typedef import UTF8, Identifier
from pyiceberg.utils.properties import property_as_bool
from requests import HTTPError, Session
from tenacity import retry

from mixed_iceberg.caching import LruCache

__all__ = ["ConditionalRestCatalog", "parse_answer", "refresh_for_commit"]

log = logging.getLogger(__name__)

F = TypeVar("F", bound=Callable[..., Any])

#: RestCatalog's retry of a request whose token expired (tenacity's decorator is untyped here).
_retrying: Callable[[F], F] = retry(**_RETRY_ARGS)  # type: ignore[call-overload]

#: Tables whose last answer is kept per catalog (a table's answer is its parsed metadata).
ANSWERS_KEPT = 256


class ConditionalRestCatalog(RestCatalog):
    """A :class:`RestCatalog` whose loads are conditional on the last answer's ``ETag``."""

    def __init__(self, name: str, **properties: str) -> None:
        super().__init__(name, **properties)
        #: (table, snapshots mode) -> (the answer's ETag, the answer)
        self.answers: LruCache[tuple[Identifier, str], tuple[str, TableResponse]] = LruCache(ANSWERS_KEPT)
        #: tables seen quiet: the last load found no change, and no commit since conflicted
        self.quiet: LruCache[Identifier, bool] = LruCache(ANSWERS_KEPT)
        #: loads answered 304, and refreshes skipped by refresh_for_commit (tests and benches read them)
        self.not_modified = 0
        self.refreshes_skipped = 0

    def head_is_own(self, table: Table) -> bool:
        """Whether ``table`` holds this catalog's last answer for it (the writer's own commit or
        load, with the snapshots of mode ``all``) and the table has been quiet since."""
        ident = table.name()
        known = self.answers.peek((ident, "all"))
        return (
            self._mode() == "all"
            and self.quiet.peek(ident) is True
            and known is not None
            and known[1].metadata_location == table.metadata_location
        )

    def _create_session(self) -> Session:
        """pyiceberg's session, the environment read once instead of on every request: requests
        looks up proxy variables, the CA bundle variables and ~/.netrc for each request it sends
        (``Session.merge_environment_settings``). Without proxy variables, that lookup can only
        yield the CA bundle (kept here) and netrc credentials, which requests ignores when the
        session has an ``auth`` (pyiceberg always sets one); with proxies, nothing changes."""
        session = super()._create_session()
        if session.trust_env and not getproxies() and session.auth is not None:
            bundle = os.environ.get("REQUESTS_CA_BUNDLE") or os.environ.get("CURL_CA_BUNDLE")
            if bundle:  # as requests: the variable wins over the session's own setting
                session.verify = bundle
            session.trust_env = False
        return session

    def _mode(self) -> str:
        mode = self.properties.get(SNAPSHOT_LOADING_MODE) or "all"
        if mode not in ("all", "refs"):
            raise ValueError(f"Invalid snapshot-loading-mode: {mode}")
        return mode

    @_retrying
    def load_table(self, identifier: str | Identifier) -> Table:
        self._check_endpoint(Capability.V1_LOAD_TABLE)
        mode = self._mode()
        params = {"snapshots": mode} if self.properties.get(SNAPSHOT_LOADING_MODE) else {}
        ident = self.identifier_to_tuple(identifier)
        known = self.answers.get((ident, mode))
        headers = {"If-None-Match": known[0]} if known is not None else {}
        response = self._session.get(
            self.url(Endpoints.load_table, prefixed=True, **self._split_identifier_for_path(identifier)),
            params=params,
            headers=headers,
        )
        if response.status_code == 304 and known is not None:
            self.not_modified += 1
            self.quiet.put(ident, True)
            return self._response_to_table(ident, known[1])
        self.quiet.discard(ident)
        try:
            response.raise_for_status()
        except HTTPError as exc:
            self.answers.discard((ident, mode))
            _handle_non_200_response(exc, {404: NoSuchTableError})
        answer = parse_answer(response.text, known[1].metadata if known is not None else None)
        self._remember(ident, mode, response.headers.get("ETag"), answer)
        return self._response_to_table(ident, answer)

    @_retrying
    def commit_table(
        self, table: Table, requirements: tuple[TableRequirement, ...], updates: tuple[TableUpdate, ...]
    ) -> CommitTableResponse:
        # RestCatalog.commit_table's request and error mapping; the answer parsed by parse_answer.
        self._check_endpoint(Capability.V1_UPDATE_TABLE)
        identifier = table.name()
        request = CommitTableRequest(
            identifier=TableIdentifier(namespace=list(identifier[:-1]), name=identifier[-1]),
            requirements=requirements,
            updates=updates,
        )
        headers = dict(self._session.headers)
        if table_token := table.config.get(TOKEN):
            headers[AUTHORIZATION_HEADER] = f"{BEARER_PREFIX} {table_token}"
        response = self._session.post(
            self.url(Endpoints.update_table, prefixed=True, **self._split_identifier_for_path(request.identifier)),
            data=request.model_dump_json().encode(UTF8),
            headers=headers,
        )
        try:
            response.raise_for_status()
        except HTTPError as exc:
            self.answers.discard((identifier, "all"))
            self.quiet.discard(identifier)
            _handle_non_200_response(
                exc,
                {
                    409: CommitFailedException,
                    500: CommitStateUnknownException,
                    502: CommitStateUnknownException,
                    504: CommitStateUnknownException,
                },
            )
        answer = parse_answer(response.text, table.metadata)
        if answer.metadata_location is None:
            raise CommitStateUnknownException(f"{'.'.join(identifier)}: the commit's answer names no metadata-location")
        if self._mode() == "all":  # what the next load will answer, with the last load's config and credentials
            last = self.answers.peek((identifier, "all"))
            context = (
                {"config": last[1].config, "storage_credentials": last[1].storage_credentials}
                if last
                else {"config": table.config}
            )
            self._remember(identifier, "all", response.headers.get("ETag"), answer.model_copy(update=context))
        return CommitTableResponse(metadata=answer.metadata, metadata_location=answer.metadata_location)

    @staticmethod
    def _delete_old_metadata(io: FileIO, base: TableMetadata, metadata: TableMetadata) -> None:
        """pyiceberg's client-side clean-up after a commit (``write.metadata.delete-after-commit
        .enabled``), quiet about files already gone: a REST server that deletes them itself, as
        serve and Iceberg's reference server do, got there first, and pyiceberg would log a
        warning for each on every commit."""
        if not property_as_bool(metadata.properties, TableProperties.METADATA_DELETE_AFTER_COMMIT_ENABLED, False):
            return
        current = {entry.metadata_file for entry in metadata.metadata_log}
        for location in sorted({entry.metadata_file for entry in base.metadata_log} - current):
            try:
                io.delete(location)
            except FileNotFoundError:
                pass
            except OSError as exc:
                log.warning("could not delete old metadata file %s: %s", location, exc)

    def _remember(self, ident: Identifier, mode: str, tag: str | None, answer: TableResponse) -> None:
        if tag:
            self.answers.put((ident, mode), (tag, answer))
        else:
            self.answers.discard((ident, mode))


def refresh_for_commit(table: Table) -> None:
    """Refresh ``table`` before a commit unless its catalog knows the refresh would change
    nothing it can know (:meth:`ConditionalRestCatalog.head_is_own`); see the module's docstring
    for why a stale head is still safe."""
    catalog = table.catalog
    if isinstance(catalog, ConditionalRestCatalog) and catalog.head_is_own(table):
        catalog.refreshes_skipped += 1
        return
    table.refresh()


def parse_answer(text: str, known: TableMetadata | None) -> TableResponse:
    """A table answer (load, create, commit), its snapshots taken from ``known`` where it has
    them: a snapshot id names one immutable snapshot, and pydantic builds each ``Snapshot``
    through Python code, the largest part of parsing a long history. Equal to
    ``TableResponse.model_validate_json(text)``."""
    document = from_json(text)  # pydantic-core's parser: a third of json.loads' time on a metadata answer
    metadata = document.get("metadata") if isinstance(document, dict) else None
    snapshots = metadata.get("snapshots") if isinstance(metadata, dict) else None
    if known is None or not known.snapshots or metadata.get("format-version") not in (2, 3) or not isinstance(snapshots, list):  # type: ignore[union-attr]
        return TableResponse.model_validate(document)
    answer = TableResponse.model_validate({**document, "metadata": {**metadata, "snapshots": []}})  # type: ignore[dict-item]
    by_id: dict[Any, Snapshot] = {snapshot.snapshot_id: snapshot for snapshot in known.snapshots}
    parsed = [by_id.get(entry.get("snapshot-id")) if isinstance(entry, dict) else None for entry in snapshots]
    parsed = [
        found if found is not None else Snapshot.model_validate(entry) for found, entry in zip(parsed, snapshots, strict=True)
    ]
    return answer.model_copy(update={"metadata": answer.metadata.model_copy(update={"snapshots": parsed})})
