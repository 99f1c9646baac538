"""The ASGI app of ``mixed-iceberg serve``: the Iceberg REST catalog over the served catalogs.

Routes live under ``/v1/catalogs/<name>/`` (the prefix ``/v1/config`` hands out), plus
``/v1/config``, ``/v1/oauth/tokens``, ``/metrics`` (Prometheus, :mod:`.prometheus`) and the
dashboard (``/dashboard``, ``/api/v1/dashboard/...``, :mod:`.dashboard`). In front of them: the token check
(:mod:`.auth`), then the path and body-size guard (:mod:`.guard`). Every error is answered
in the spec's error model (:mod:`.errors`), an unknown route too.

Example:
    >>> from mixed_iceberg.service import create_app, load_service_config  # doctest: +SKIP
    >>> app = create_app(load_service_config("conf/service.yaml"))        # doctest: +SKIP
"""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from mixed_iceberg._pyiceberg import apply_patches
from mixed_iceberg.service.auth import TOKEN_PATH, AuthMiddleware, TokenAuthority, exchange_token
from mixed_iceberg.service.catalogs import ServedCatalogs
from mixed_iceberg.service.dashboard import PAGE as DASHBOARD_PAGE
from mixed_iceberg.service.dashboard import dashboard_routes
from mixed_iceberg.service.errors import error_response
from mixed_iceberg.service.guard import GuardMiddleware
from mixed_iceberg.service.prometheus import PATH as METRICS_PATH
from mixed_iceberg.service.prometheus import MetricsCollector, metrics
from mixed_iceberg.service.routes import config, namespaces, tables, transactions
from mixed_iceberg.service.settings import ServiceConfig
from mixed_iceberg.service.state import ServiceState

__all__ = ["create_app"]

_NS = "/v1/catalogs/{catalog}/namespaces"
_TABLE = _NS + "/{namespace}/tables/{table}"


def _routes() -> list[BaseRoute]:
    # HEAD before GET: Starlette answers HEAD with a path's GET route (200) when that comes first.
    return [
        Route("/v1/config", config.get_config, methods=["GET"]),
        Route(TOKEN_PATH, exchange_token, methods=["POST"]),
        Route(METRICS_PATH, metrics, methods=["GET"]),
        Route(_NS, namespaces.list_namespaces, methods=["GET"]),
        Route(_NS, namespaces.create_namespace, methods=["POST"]),
        Route(_NS + "/{namespace}", namespaces.namespace_exists, methods=["HEAD"]),
        Route(_NS + "/{namespace}", namespaces.load_namespace, methods=["GET"]),
        Route(_NS + "/{namespace}", namespaces.drop_namespace, methods=["DELETE"]),
        Route(_NS + "/{namespace}/properties", namespaces.update_properties, methods=["POST"]),
        Route(_NS + "/{namespace}/tables", tables.list_tables, methods=["GET"]),
        Route(_NS + "/{namespace}/tables", tables.create_table, methods=["POST"]),
        Route(_NS + "/{namespace}/register", tables.register_table, methods=["POST"]),
        Route(_TABLE, tables.table_exists, methods=["HEAD"]),
        Route(_TABLE, tables.load_table, methods=["GET"]),
        Route(_TABLE, tables.commit_table, methods=["POST"]),
        Route(_TABLE, tables.drop_table, methods=["DELETE"]),
        Route(_TABLE + "/metrics", tables.report_metrics, methods=["POST"]),
        Route("/v1/catalogs/{catalog}/tables/rename", tables.rename_table, methods=["POST"]),
        Route("/v1/catalogs/{catalog}/transactions/commit", transactions.commit_transaction, methods=["POST"]),
        *dashboard_routes(),
    ]


async def _http_error(request: Request, exc: Exception) -> Response:
    status = exc.status_code if isinstance(exc, HTTPException) else 500
    if status == 404:
        return error_response(404, "NoSuchEndpointException", f"No such endpoint: {request.method} {request.url.path}")
    if status == 405:
        return error_response(405, "MethodNotAllowedException", f"Method not allowed: {request.method} {request.url.path}")
    return error_response(status, "BadRequestException", str(getattr(exc, "detail", "")))


def create_app(config: ServiceConfig, catalogs: ServedCatalogs | None = None) -> Starlette:
    """The REST catalog app for ``config`` (its catalogs file, tokens and body limit)."""
    apply_patches()  # pyiceberg's models then parse Amoro's statistics blob types in requests
    catalogs = catalogs or ServedCatalogs(config.catalogs_file, config.default_catalog)
    authority = TokenAuthority(config)
    app = Starlette(
        routes=_routes(),
        middleware=[
            Middleware(AuthMiddleware, authority=authority, open_prefixes=(DASHBOARD_PAGE,)),
            Middleware(GuardMiddleware, max_body_bytes=config.max_body_bytes),
        ],
        exception_handlers={HTTPException: _http_error},
    )
    app.state.service = ServiceState(config, catalogs)
    app.state.authority = authority
    app.state.metrics_collector = MetricsCollector(catalogs, kafka_bootstrap=config.kafka_bootstrap_servers)
    return app
