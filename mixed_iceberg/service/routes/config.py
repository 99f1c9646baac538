"""``GET /v1/config``: the catalog's prefix and the endpoints served.

``warehouse`` names the catalog (its name or its warehouse location); without it the default
catalog answers. ``overrides.prefix`` is ``catalogs/<name>``: every later request of the
client goes to ``/v1/catalogs/<name>/...``. Nothing of the catalog's configuration is sent
(its URI may hold a password, its storage keys are secrets).
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from mixed_iceberg.service.routes.common import endpoint, state

__all__ = ["ENDPOINTS", "get_config"]

#: Every endpoint served under the prefix, as the spec's ``endpoints`` list names them.
ENDPOINTS = [
    "GET /v1/{prefix}/namespaces",
    "POST /v1/{prefix}/namespaces",
    "GET /v1/{prefix}/namespaces/{namespace}",
    "HEAD /v1/{prefix}/namespaces/{namespace}",
    "DELETE /v1/{prefix}/namespaces/{namespace}",
    "POST /v1/{prefix}/namespaces/{namespace}/properties",
    "GET /v1/{prefix}/namespaces/{namespace}/tables",
    "POST /v1/{prefix}/namespaces/{namespace}/tables",
    "GET /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "HEAD /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "DELETE /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "POST /v1/{prefix}/namespaces/{namespace}/register",
    "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/metrics",
    "POST /v1/{prefix}/tables/rename",
    "POST /v1/{prefix}/transactions/commit",
]


@endpoint
async def get_config(request: Request) -> Response:
    served = state(request).catalogs.for_warehouse(request.query_params.get("warehouse"))
    return JSONResponse({"defaults": {}, "overrides": {"prefix": f"catalogs/{served.name}"}, "endpoints": ENDPOINTS})
