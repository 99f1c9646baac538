"""Tables: list (paginated), create (``stage-create`` too), load (``snapshots=all|refs``), ``HEAD``,
commit, drop (``purgeRequested``), rename, register, metrics reports.

A keyed Mixed-Iceberg table shows as its two stores; dropping or renaming its BaseStore
drops or renames the table (both stores, as ``MixedCatalog`` does), its ChangeStore alone
cannot be dropped or renamed (403). Commits go through :mod:`mixed_iceberg.service.commits`.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from pyiceberg import exceptions as ice
from pyiceberg.catalog.rest import TableResponse
from pyiceberg.io import load_file_io
from pyiceberg.partitioning import UNPARTITIONED_PARTITION_SPEC, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.serializers import FromInputFile
from pyiceberg.table import CommitTableRequest
from pyiceberg.table.metadata import TableMetadata, new_table_metadata
from pyiceberg.table.sorting import UNSORTED_SORT_ORDER, SortOrder
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from mixed_iceberg.catalog.markers import TABLE_STORE
from mixed_iceberg.catalog.metadata_json import metadata_json
from mixed_iceberg.service.catalogs import ServedCatalog
from mixed_iceberg.service.commits import Committed, TableChange
from mixed_iceberg.service.errors import refuse
from mixed_iceberg.service.keyed import WRITER_HEADER, is_keyed_store
from mixed_iceberg.service.paths import (
    check_location,
    check_name,
    check_namespace,
    check_properties_locations,
    namespace_from_path,
)
from mixed_iceberg.service.routes.common import endpoint, json_body, model_response, page, served, state, threaded
from mixed_iceberg.service.v3 import with_column_defaults, with_row_lineage
from mixed_iceberg.typedef import TableStore

__all__ = [
    "commit_table",
    "create_table",
    "drop_table",
    "list_tables",
    "load_table",
    "register_table",
    "rename_table",
    "report_metrics",
    "table_change",
    "table_exists",
]


def _dotted(namespace: tuple[str, ...], name: str) -> str:
    return ".".join((*namespace, name))


def _identifier(request: Request) -> tuple[tuple[str, ...], str]:
    return namespace_from_path(request.path_params["namespace"]), check_name(request.path_params["table"])


def _body_identifier(value: Any, what: str) -> tuple[tuple[str, ...], str]:
    if not isinstance(value, dict):
        refuse(f"Malformed request: {what}: expected an object with namespace and name")
    return check_namespace(value.get("namespace")), check_name(value.get("name"))  # type: ignore[arg-type]


def _require_namespace(target: ServedCatalog, namespace: tuple[str, ...]) -> None:
    if not target.sql().namespace_exists(namespace):
        raise ice.NoSuchNamespaceError(f"Namespace does not exist: {'.'.join(namespace)}")


def _load(target: ServedCatalog, namespace: tuple[str, ...], name: str) -> tuple[TableMetadata, str]:
    try:
        table = target.sql().load_table((*namespace, name))
    except ice.NoSuchTableError:
        raise ice.NoSuchTableError(f"Table does not exist: {_dotted(namespace, name)}") from None
    return table.metadata, str(table.metadata_location)


def etag(location: str, snapshots: str = "all") -> str:
    """The ETag of a table's answer: one metadata file in one ``snapshots`` mode (a metadata file
    never changes, and ``refs`` answers differ from ``all`` answers, as the spec asks)."""
    return '"' + hashlib.sha256(f"{snapshots}:{location}".encode()).hexdigest()[:32] + '"'


def _result(metadata: TableMetadata, location: str | None, snapshots: str = "all") -> Response:
    if location is None or metadata.format_version >= 3:
        response = model_response(
            TableResponse.model_validate({"metadata-location": location, "metadata": metadata, "config": {}})
        )
    else:  # the metadata file's own JSON (its history serialised once, catalog/metadata_json.py)
        body = f'{{"metadata-location":{json.dumps(location)},"metadata":{metadata_json(metadata)},"config":{{}}}}'
        response = Response(body, media_type="application/json")
    if location is not None:
        response.headers["ETag"] = etag(location, snapshots)
    return response


def _committed(committed: Committed) -> Response:
    return _result(committed.metadata, committed.metadata_location)


def _ours(request: Request) -> bool:
    return WRITER_HEADER in request.headers


@endpoint
async def list_tables(request: Request) -> Response:
    namespace = namespace_from_path(request.path_params["namespace"])
    target = served(request)

    def run() -> list[str]:
        _require_namespace(target, namespace)
        return [ident[-1] for ident in target.sql().list_tables(namespace)]

    names, token = page(await threaded(run), request)
    body: dict[str, Any] = {"identifiers": [{"namespace": list(namespace), "name": name} for name in names]}
    if token is not None:
        body["next-page-token"] = token
    return JSONResponse(body)


@endpoint
async def create_table(request: Request) -> Response:
    namespace = namespace_from_path(request.path_params["namespace"])
    body = await json_body(request)
    name = check_name(body.get("name"))  # type: ignore[arg-type]
    schema = Schema.model_validate(body.get("schema"))
    spec = PartitionSpec.model_validate(body["partition-spec"]) if body.get("partition-spec") else UNPARTITIONED_PARTITION_SPEC
    order = SortOrder.model_validate(body["write-order"]) if body.get("write-order") else UNSORTED_SORT_ORDER
    properties = {str(k): str(v) for k, v in (body.get("properties") or {}).items()}
    stage = bool(body.get("stage-create", False))
    target = served(request)
    check_properties_locations(properties, target.warehouse, _dotted(namespace, name))
    if body.get("location") is not None:
        check_location(body["location"], target.warehouse, f"{_dotted(namespace, name)}: location")

    def run() -> Response:
        catalog = target.sql()
        _require_namespace(target, namespace)
        if catalog.table_exists((*namespace, name)):
            raise ice.TableAlreadyExistsError(f"Table already exists: {_dotted(namespace, name)}")
        locate = getattr(catalog, "table_location", None)
        requested = body.get("location")
        if locate is not None:
            location = locate(requested, ".".join(namespace), name)
        else:
            location = requested or f"{target.warehouse.rstrip('/')}/{'.'.join(namespace)}.db/{name}"
        location = check_location(location.rstrip("/"), target.warehouse, f"{_dotted(namespace, name)}: location")
        try:
            metadata = new_table_metadata(schema, spec, order, location, dict(properties))
            metadata = with_row_lineage(with_column_defaults(schema, metadata))
        except ValueError as exc:
            refuse(f"{_dotted(namespace, name)}: cannot create the table: {exc}")
        if stage:
            return _result(metadata, None)
        return _committed(state(request).committer(target).create(namespace, name, metadata))

    return await threaded(run)


@endpoint
async def load_table(request: Request) -> Response:
    namespace, name = _identifier(request)
    snapshots = request.query_params.get("snapshots", "all")
    if snapshots not in ("all", "refs"):
        refuse(f"Invalid snapshots {snapshots!r}: expected 'all' or 'refs'")
    target = served(request)
    metadata, location = await threaded(_load, target, namespace, name)
    tag = etag(location, snapshots)
    matches = _tags(request.headers.get("if-none-match"))
    if tag in matches or "*" in matches:
        return Response(status_code=304, headers={"ETag": tag})
    if snapshots == "refs":
        referenced = {ref.snapshot_id for ref in metadata.refs.values()}
        metadata = metadata.model_copy(update={"snapshots": [s for s in metadata.snapshots if s.snapshot_id in referenced]})
        return _result(metadata, location, snapshots)
    # A metadata file never changes, so neither does its full answer: serialised once.
    bodies = state(request).load_bodies
    body = bodies.get((target.name, location))
    if body is None:
        body = bytes(_result(metadata, location).body)
        bodies.put((target.name, location), body)
    return Response(body, media_type="application/json", headers={"ETag": tag})


def _tags(header: str | None) -> set[str]:
    """The entity tags of an ``If-None-Match`` header (weak ones compared as strong, RFC 9110's
    weak comparison, which GET may use); ``*`` matches any current table."""
    if not header:
        return set()
    return {part.strip().removeprefix("W/") for part in header.split(",")}


@endpoint
async def table_exists(request: Request) -> Response:
    namespace, name = _identifier(request)
    target = served(request)
    exists = await threaded(lambda: target.sql().table_exists((*namespace, name)))
    return Response(status_code=204 if exists else 404)


def table_change(body: dict[str, Any], namespace: tuple[str, ...] | None = None, name: str | None = None) -> TableChange:
    """A commit request's change, its identifier checked (taken from the path when given)."""
    if namespace is not None and name is not None:
        given = body.get("identifier")
        if given is not None and _body_identifier(given, "identifier") != (namespace, name):
            refuse(f"Malformed request: identifier {given} does not match the path {_dotted(namespace, name)}")
        body = {**body, "identifier": {"namespace": list(namespace), "name": name}}
    else:
        namespace, name = _body_identifier(body.get("identifier"), "identifier")
    request = CommitTableRequest.model_validate(body)
    return TableChange(namespace, name, tuple(request.requirements), tuple(request.updates))


@endpoint
async def commit_table(request: Request) -> Response:
    namespace, name = _identifier(request)
    change = table_change(await json_body(request), namespace, name)
    target = served(request)
    ours = _ours(request)

    def run() -> Response:  # the answer is serialised off the event loop too
        return _committed(state(request).committer(target).commit([change], ours=ours)[0])

    return await threaded(run)


def _store_kind(target: ServedCatalog, namespace: tuple[str, ...], name: str) -> TableStore | None:
    """Which store of a keyed table ``namespace.name`` is (None: not a keyed table's store)."""
    metadata, _ = _load(target, namespace, name)
    if not is_keyed_store(metadata.properties):
        return None
    return TableStore.CHANGE if metadata.properties.get(TABLE_STORE) == TableStore.CHANGE.value else TableStore.BASE


@endpoint
async def drop_table(request: Request) -> Response:
    namespace, name = _identifier(request)
    purge = request.query_params.get("purgeRequested", "false").lower() == "true"
    target = served(request)

    def run() -> None:
        try:
            kind = _store_kind(target, namespace, name)
        except (ice.NoSuchTableError, FileNotFoundError, OSError, ValueError):
            kind = None  # a damaged table is dropped all the same (MixedCatalog drops it)
            if not target.sql().table_exists((*namespace, name)):
                raise ice.NoSuchTableError(f"Table does not exist: {_dotted(namespace, name)}") from None
        if kind == TableStore.CHANGE:
            refuse(f"{_dotted(namespace, name)} is the ChangeStore of a keyed table: drop the table (its BaseStore)", "forbidden")
        target.mixed().drop_table(_dotted(namespace, name), purge=purge)

    await threaded(run)
    return Response(status_code=204)


@endpoint
async def rename_table(request: Request) -> Response:
    body = await json_body(request)
    source = _body_identifier(body.get("source"), "source")
    destination = _body_identifier(body.get("destination"), "destination")
    target = served(request)

    def run() -> None:
        catalog = target.sql()
        kind = _store_kind(target, *source)
        if kind == TableStore.CHANGE:
            refuse(f"{_dotted(*source)} is the ChangeStore of a keyed table: rename the table (its BaseStore)", "forbidden")
        _require_namespace(target, destination[0])
        if catalog.table_exists((*destination[0], destination[1])):
            raise ice.TableAlreadyExistsError(f"Table already exists: {_dotted(*destination)}")
        if kind == TableStore.BASE:
            target.mixed().rename_table(_dotted(*source), _dotted(*destination))
        else:
            catalog.rename_table((*source[0], source[1]), (*destination[0], destination[1]))

    await threaded(run)
    return Response(status_code=204)


@endpoint
async def register_table(request: Request) -> Response:
    namespace = namespace_from_path(request.path_params["namespace"])
    body = await json_body(request)
    name = check_name(body.get("name"))  # type: ignore[arg-type]
    location = body.get("metadata-location")
    if not isinstance(location, str) or not location:
        refuse("Malformed request: metadata-location: expected a metadata file location")
    overwrite = bool(body.get("overwrite", False))
    target = served(request)
    check_location(location, target.warehouse, f"{_dotted(namespace, name)}: metadata-location")

    def run() -> Response:
        catalog = target.sql()
        _require_namespace(target, namespace)
        io = load_file_io(catalog.properties, location)
        try:
            metadata = FromInputFile.table_metadata(io.new_input(location))
        except FileNotFoundError:
            refuse(f"{_dotted(namespace, name)}: metadata-location {location} does not exist")
        except (ValueError, OSError) as exc:
            refuse(f"{_dotted(namespace, name)}: metadata-location {location} is not table metadata: {exc}")
        check_location(metadata.location, target.warehouse, f"{_dotted(namespace, name)}: the registered table's location")
        committer = state(request).committer(target)
        if overwrite and catalog.table_exists((*namespace, name)):
            _, current = _load(target, namespace, name)
            return _committed(committer.replace_location(namespace, name, current, location, metadata))
        return _committed(committer.create(namespace, name, metadata, location=location))

    return await threaded(run)


@endpoint
async def report_metrics(request: Request) -> Response:
    namespace, name = _identifier(request)
    body = await json_body(request)
    if not isinstance(body.get("report-type"), str):
        refuse("Malformed request: report-type: expected 'scan-report' or 'commit-report'")
    target = served(request)

    def run() -> None:
        if not target.sql().table_exists((*namespace, name)):
            raise ice.NoSuchTableError(f"Table does not exist: {_dotted(namespace, name)}")
        state(request).metrics(target).record(".".join(namespace), name, body)

    await threaded(run)
    return Response(status_code=204)
