"""Refusals before routing: an oversized body, a path-like segment (``%2F``, ``..``).

The body limit is checked on ``Content-Length`` and again while a chunked body streams in, so
no route ever holds more than ``max-body-bytes`` of a request. Both answer 400 in the spec's
error model.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mixed_iceberg.exceptions import RequestRefusedError
from mixed_iceberg.service.errors import error_response, response_for
from mixed_iceberg.service.paths import check_raw_path

__all__ = ["GuardMiddleware"]


class GuardMiddleware:
    """Path and body-size checks in front of the app."""

    def __init__(self, app: ASGIApp, max_body_bytes: int) -> None:
        self.app = app
        self.limit = max_body_bytes

    def _too_large(self) -> str:
        return f"Malformed request: the body exceeds the limit of {self.limit} bytes (max-body-bytes)"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        try:
            check_raw_path(scope.get("raw_path") or scope["path"].encode())
        except RequestRefusedError as exc:
            await response_for(exc)(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.limit:
            await error_response(400, "BadRequestException", self._too_large())(scope, receive, send)
            return
        received = 0
        started = False

        async def limited() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.limit:  # a route answers it as a 400 (RequestRefusedError)
                    raise RequestRefusedError(self._too_large())
            return message

        async def tracking(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, limited, tracking)
        except RequestRefusedError as exc:
            if not started:
                await response_for(exc)(scope, receive, send)
