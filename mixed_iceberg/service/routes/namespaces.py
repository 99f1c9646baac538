"""Namespaces: list (paginated, ``parent`` for nested ones), create, load, ``HEAD``, properties, drop.

Nested namespaces are what pyiceberg's SQL catalog holds (levels joined with ``.``, which is
why a level may not contain one). A namespace with tables or child namespaces is not
dropped (409). pyiceberg marks a namespace created without properties with
``exists=true``; that marker is not shown as a property.
"""

from __future__ import annotations

from typing import Any

from pyiceberg import exceptions as ice
from pyiceberg.catalog.sql import SqlCatalog
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from mixed_iceberg.service.errors import refuse
from mixed_iceberg.service.paths import check_namespace, check_properties_locations, namespace_from_path
from mixed_iceberg.service.routes.common import endpoint, json_body, page, served, threaded

__all__ = ["create_namespace", "drop_namespace", "list_namespaces", "load_namespace", "namespace_exists", "update_properties"]

_MARKER = {"exists": "true"}


def _dotted(namespace: tuple[str, ...]) -> str:
    return ".".join(namespace)


def _require(catalog: SqlCatalog, namespace: tuple[str, ...]) -> None:
    if not catalog.namespace_exists(namespace):
        raise ice.NoSuchNamespaceError(f"Namespace does not exist: {_dotted(namespace)}")


def _properties(catalog: SqlCatalog, namespace: tuple[str, ...]) -> dict[str, str]:
    _require(catalog, namespace)
    found = dict(catalog.load_namespace_properties(namespace))
    if found.get("exists") == "true":
        del found["exists"]
    return found


def _string_map(value: Any, what: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
        refuse(f"Malformed request: {what}: expected an object of strings")
    if not all(isinstance(v, str) for v in value.values()):
        refuse(f"Malformed request: {what}: expected string values")
    return value


@endpoint
async def list_namespaces(request: Request) -> Response:
    catalog = await threaded(served(request).sql)
    raw_parent = request.query_params.get("parent")
    parent = namespace_from_path(raw_parent) if raw_parent else ()

    def run() -> list[tuple[str, ...]]:
        if parent:
            _require(catalog, parent)
        return [tuple(ns) for ns in catalog.list_namespaces(parent)]

    found = {"\x1f".join(ns): ns for ns in await threaded(run)}
    names, token = page(list(found), request)
    body: dict[str, Any] = {"namespaces": [list(found[name]) for name in names]}
    if token is not None:
        body["next-page-token"] = token
    return JSONResponse(body)


@endpoint
async def create_namespace(request: Request) -> Response:
    body = await json_body(request)
    namespace = check_namespace(body.get("namespace"))  # type: ignore[arg-type]
    properties = _string_map(body.get("properties"), "properties")
    target = served(request)
    check_properties_locations(properties, target.warehouse, f"namespace {_dotted(namespace)}")

    def run() -> dict[str, str]:
        catalog = target.sql()
        if catalog.namespace_exists(namespace):
            raise ice.NamespaceAlreadyExistsError(f"Namespace already exists: {_dotted(namespace)}")
        catalog.create_namespace(namespace, properties or dict(_MARKER))
        return _properties(catalog, namespace)

    return JSONResponse({"namespace": list(namespace), "properties": await threaded(run)})


@endpoint
async def load_namespace(request: Request) -> Response:
    namespace = namespace_from_path(request.path_params["namespace"])
    target = served(request)
    properties = await threaded(lambda: _properties(target.sql(), namespace))
    return JSONResponse({"namespace": list(namespace), "properties": properties})


@endpoint
async def namespace_exists(request: Request) -> Response:
    namespace = namespace_from_path(request.path_params["namespace"])
    target = served(request)
    exists = await threaded(lambda: target.sql().namespace_exists(namespace))
    return Response(status_code=204 if exists else 404)


@endpoint
async def drop_namespace(request: Request) -> Response:
    namespace = namespace_from_path(request.path_params["namespace"])
    target = served(request)

    def run() -> None:
        catalog = target.sql()
        _require(catalog, namespace)
        tables = catalog.list_tables(namespace)
        children = catalog.list_namespaces(namespace)
        if tables or children:
            raise ice.NamespaceNotEmptyError(
                f"Namespace {_dotted(namespace)} is not empty: {len(tables)} tables, {len(children)} namespaces"
            )
        catalog.drop_namespace(namespace)

    await threaded(run)
    return Response(status_code=204)


@endpoint
async def update_properties(request: Request) -> Response:
    namespace = namespace_from_path(request.path_params["namespace"])
    body = await json_body(request)
    removals = body.get("removals") or []
    if not isinstance(removals, list) or not all(isinstance(key, str) for key in removals):
        refuse("Malformed request: removals: expected a list of strings")
    updates = _string_map(body.get("updates"), "updates")
    both = sorted(set(removals) & set(updates))
    if both:
        refuse(f"Invalid properties update: keys both set and removed: {both}", "invalid")
    target = served(request)
    check_properties_locations(updates, target.warehouse, f"namespace {_dotted(namespace)}")

    def run() -> dict[str, list[str]]:
        catalog = target.sql()
        _require(catalog, namespace)
        summary = catalog.update_namespace_properties(namespace, set(removals), updates)
        return {"updated": sorted(summary.updated), "removed": sorted(summary.removed), "missing": sorted(summary.missing or [])}

    return JSONResponse(await threaded(run))
