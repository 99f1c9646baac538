"""The dashboard's HTTP layer: the page, its assets and the JSON API, thin over :mod:`.lists`,
:mod:`.pages` and :mod:`.actions`.

``GET /dashboard`` is the page (``static/index.html``, its script and style: every asset ships in
the package, no CDN, no build step). The page holds no data: it reads ``/api/v1/dashboard/...``,
which sits behind ``serve``'s bearer-token rule like the catalog routes (the page asks for the
token once and keeps it in the tab's session storage). An action is a ``POST`` that must carry
``Content-Type: application/json`` and the header ``X-Requested-By: mixed-iceberg-dashboard``
and, when the browser sends an ``Origin``, come from the server's own origin: a cross-site form
or script cannot send either without a CORS preflight, which ``serve`` never grants.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import BaseRoute, Route

from mixed_iceberg.exceptions import MixedIcebergError, PropertyError, RequestRefusedError
from mixed_iceberg.service.catalogs import ServedCatalog, ServedCatalogs
from mixed_iceberg.service.dashboard import actions, lists
from mixed_iceberg.service.dashboard.actions import Action, ActionLog
from mixed_iceberg.service.dashboard.pages import groups_page, table_page
from mixed_iceberg.service.dashboard.source import Source
from mixed_iceberg.service.errors import error_response, response_for
from mixed_iceberg.service.prometheus.collector import MetricsCollector

__all__ = ["API", "PAGE", "STATIC", "dashboard_routes"]

PAGE = "/dashboard"
API = "/api/v1/dashboard"
STATIC = __file__.rsplit("/", 1)[0] + "/static"
#: The header an action must carry (a cross-site request cannot set it without a preflight).
CSRF_HEADER = "x-requested-by"
CSRF_VALUE = "mixed-iceberg-dashboard"
#: The table list's largest page.
MAX_LIMIT = 10_000


def _source(request: Request) -> Source:
    app = request.app
    if not hasattr(app.state, "dashboard_source"):
        collector: MetricsCollector = app.state.metrics_collector
        app.state.dashboard_source = Source(collector)
    source: Source = app.state.dashboard_source
    return source


def _catalogs(request: Request) -> ServedCatalogs:
    catalogs: ServedCatalogs = request.app.state.service.catalogs
    return catalogs


async def _answer(call: Callable[[], Any]) -> Response:
    """``call()`` in a worker thread, as JSON; an error as the REST error model (400 for a bad property)."""
    try:
        body = await run_in_threadpool(call)
    except PropertyError as exc:
        return error_response(400, "BadRequestException", str(exc))
    except Exception as exc:  # the API's boundary: response_for logs what is unexpected
        return response_for(exc)
    return JSONResponse(body)


async def page(request: Request) -> Response:
    """``GET /dashboard``: the page (no data in it)."""
    return FileResponse(f"{STATIC}/index.html", media_type="text/html", headers={"Cache-Control": "no-cache"})


#: The page's assets by name, with their media type (nothing else under static/ is served).
ASSETS = {"app.js": "text/javascript", "style.css": "text/css"}


async def asset(request: Request) -> Response:
    """``GET /dashboard/static/<name>``: the page's script or style."""
    name = request.path_params["name"]
    if name not in ASSETS:
        return error_response(404, "NoSuchEndpointException", f"No such asset: {name}")
    return FileResponse(f"{STATIC}/{name}", media_type=ASSETS[name], headers={"Cache-Control": "no-cache"})


def _int(request: Request, name: str, default: int, most: int) -> int:
    raw = request.query_params.get(name)
    if raw is None:
        return default
    if not raw.isdigit() or int(raw) > most:
        raise RequestRefusedError(f"{name}: expected an integer from 0 to {most}, found {raw!r}")
    return int(raw)


async def overview(request: Request) -> Response:
    """``GET /api/v1/dashboard/overview``."""
    source, catalogs = _source(request), _catalogs(request)

    def build() -> dict[str, Any]:
        known = source.known()
        rows = lists.table_rows(known, actions.now_ms())
        return lists.overview(known, rows, {name: c.warehouse for name, c in catalogs.catalogs.items()})

    return await _answer(build)


async def tables(request: Request) -> Response:
    """``GET /api/v1/dashboard/tables?catalog=&q=&sort=&order=&offset=&limit=``: the table list."""
    source, params = _source(request), request.query_params

    def build() -> dict[str, Any]:
        sort = params.get("sort", "name")
        if sort not in lists.SORTS:
            raise RequestRefusedError(f"sort: expected one of {', '.join(lists.SORTS)}, found {sort!r}")
        order = params.get("order")
        if order not in (None, "asc", "desc"):
            raise RequestRefusedError(f"order: expected asc or desc, found {order!r}")
        offset = _int(request, "offset", 0, 10**9)
        limit = _int(request, "limit", 500, MAX_LIMIT)
        known = source.known()
        rows = lists.table_rows(known, actions.now_ms())
        catalog, text = params.get("catalog"), params.get("q", "").lower()
        rows = [r for r in rows if (catalog is None or r["catalog"] == catalog) and text in r["table"].lower()]
        rows = lists.sort_rows(rows, sort, None if order is None else order == "desc")
        return {"total": len(rows), "stale": known.stale, "offset": offset, "tables": rows[offset : offset + limit]}

    return await _answer(build)


def _served(request: Request) -> tuple[ServedCatalog, str]:
    return _catalogs(request).get(request.path_params["catalog"]), request.path_params["table"]


async def table(request: Request) -> Response:
    """``GET /api/v1/dashboard/catalogs/{catalog}/tables/{table}``: the table page's figures."""
    source = _source(request)
    return await _answer(lambda: table_page(source, *_served(request)))


async def groups(request: Request) -> Response:
    """``GET /api/v1/dashboard/groups``: optimizer groups and optimizers."""
    source = _source(request)
    return await _answer(lambda: groups_page(source))


def _same_origin(request: Request) -> bool:
    origin = request.headers.get("origin")
    if origin is None:
        return True
    host = request.headers.get("host", "")
    return origin.split("://", 1)[-1].rstrip("/") == host


async def act(request: Request) -> Response:
    """``POST .../tables/{table}/actions`` with ``{"action": "optimize", "type": "minor"}``,
    ``{"action": "pause"}``, ``{"action": "resume"}`` or ``{"action": "property", "key": ..., "value": ...}``."""
    if request.headers.get(CSRF_HEADER) != CSRF_VALUE or not _same_origin(request):
        return error_response(
            403, "ForbiddenException", f"an action needs the header X-Requested-By: {CSRF_VALUE} from this origin"
        )
    if request.headers.get("content-type", "").split(";")[0].strip() != "application/json":
        return error_response(415, "BadRequestException", "an action's body must be application/json")
    try:
        body = json.loads(await request.body())
    except ValueError:
        body = None
    if not isinstance(body, dict) or not isinstance(body.get("action"), str):
        return error_response(400, "BadRequestException", 'expected a JSON object with "action"')
    actor = request.client.host if request.client else "unknown"

    def run() -> dict[str, Any]:
        served, name = _served(request)
        kind = body["action"]
        arguments = {k: v for k, v in body.items() if k != "action"}
        result: dict[str, Any] = {}
        try:
            if kind == "optimize":
                message, result = actions.optimize(served, name, str(body.get("type", "")))
            elif kind in ("pause", "resume"):
                message = actions.set_enabled(served, name, kind == "resume")
            elif kind == "property":
                value = body.get("value")
                if not isinstance(body.get("key"), str) or not (value is None or isinstance(value, str)):
                    raise RequestRefusedError(
                        'a property action needs "key" (a string) and "value" (a string, or null to remove)'
                    )
                message = actions.set_property(served, name, body["key"], value)
            else:
                raise RequestRefusedError(f"action: expected optimize, pause, resume or property, found {kind!r}")
        except (RequestRefusedError, PropertyError) as exc:
            _record(served, Action(name, kind, arguments, "refused", str(exc), actor, actions.now_ms()))
            raise
        except MixedIcebergError as exc:
            _record(served, Action(name, kind, arguments, "failed", str(exc), actor, actions.now_ms()))
            raise
        _record(served, Action(name, kind, arguments, "done", message, actor, actions.now_ms()))
        return {"message": message, "result": result}

    return await _answer(run)


def _record(served: ServedCatalog, action: Action) -> None:
    ActionLog.of(served).record(action)


def dashboard_routes() -> list[BaseRoute]:
    """The dashboard's routes, for the app's route list."""
    table_path = API + "/catalogs/{catalog}/tables/{table}"
    return [
        Route(PAGE, page, methods=["GET"]),
        Route(PAGE + "/", page, methods=["GET"]),
        Route(PAGE + "/static/{name}", asset, methods=["GET"]),
        Route(API + "/overview", overview, methods=["GET"]),
        Route(API + "/tables", tables, methods=["GET"]),
        Route(API + "/groups", groups, methods=["GET"]),
        Route(table_path, table, methods=["GET"]),
        Route(table_path + "/actions", act, methods=["POST"]),
    ]
