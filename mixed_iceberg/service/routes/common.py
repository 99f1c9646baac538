"""What the route modules share: the state, the catalog of the prefix, JSON in and out, errors."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from functools import wraps
from typing import Any, ParamSpec, TypeVar

from pydantic import BaseModel
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from mixed_iceberg.service.catalogs import ServedCatalog
from mixed_iceberg.service.errors import refuse, response_for
from mixed_iceberg.service.state import ServiceState

__all__ = ["endpoint", "json_body", "model_response", "page", "served", "state", "threaded"]

P = ParamSpec("P")
T = TypeVar("T")


def state(request: Request) -> ServiceState:
    found: ServiceState = request.app.state.service
    return found


def served(request: Request) -> ServedCatalog:
    """The catalog of the ``catalogs/<name>`` prefix (404 for another)."""
    return state(request).catalogs.get(request.path_params["catalog"])


async def json_body(request: Request) -> dict[str, Any]:
    """The request's JSON object (400 when malformed or not an object)."""
    raw = await request.body()
    try:
        body = json.loads(raw) if raw else None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        refuse(f"Malformed request: invalid JSON: {exc}")
    if not isinstance(body, dict):
        refuse(f"Malformed request: expected a JSON object, found {type(body).__name__}")
    return body


def model_response(model: BaseModel, status: int = 200) -> Response:
    """``model`` as the spec's JSON (aliases, no nulls)."""
    return Response(model.model_dump_json(by_alias=True, exclude_none=True), status_code=status, media_type="application/json")


async def threaded(function: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """Run catalog I/O off the event loop."""
    return await run_in_threadpool(function, *args, **kwargs)


def endpoint(handler: Callable[[Request], Awaitable[Response]]) -> Callable[[Request], Awaitable[Response]]:
    """A route whose every error becomes the spec's error response (never an unhandled 500)."""

    @wraps(handler)
    async def guarded(request: Request) -> Response:
        try:
            return await handler(request)
        except Exception as exc:  # the HTTP boundary: every error is answered in the error model
            return response_for(exc)

    return guarded


def page(names: list[str], request: Request) -> tuple[list[str], str | None]:
    """One page of sorted ``names`` by ``pageToken`` (the last name of the previous page) and
    ``pageSize``; without ``pageSize`` everything after the token. Returns the page and the
    next token (None: no more)."""
    token = request.query_params.get("pageToken") or None
    raw_size = request.query_params.get("pageSize")
    size: int | None = None
    if raw_size is not None and raw_size != "":
        try:
            size = int(raw_size)
        except ValueError:
            refuse(f"Invalid pageSize {raw_size!r}: expected a positive integer")
        if size < 1:
            refuse(f"Invalid pageSize {raw_size!r}: expected a positive integer")
    ordered = sorted(names)
    if token is not None:
        ordered = [name for name in ordered if name > token]
    if size is None or len(ordered) <= size:
        return ordered, None
    chosen = ordered[:size]
    return chosen, chosen[-1]
