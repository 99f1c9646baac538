"""Errors as the REST spec's error model: ``{"error": {"message", "type", "code"}}``.

Clients pick their exception by status code and ``type`` (Iceberg Java's ``ErrorHandlers``:
a 404 of type ``NoSuchNamespaceException`` is a missing namespace, of ``NotFoundException`` a
missing file, any other a missing table; a 409 on a commit is ``CommitFailedException``).
Messages are Iceberg Java's where clients or its test kit read them ("Table does not exist:
ns.tbl", "Requirement failed: ..."). Bad input is a 400, never a 500; an unexpected error
is a 500 whose message says only where to look (the log has the traceback), so nothing of
the catalog's configuration (a database URL, a key) reaches a client.
"""

from __future__ import annotations

import logging
import uuid
from typing import NoReturn

from pydantic import ValidationError
from pyiceberg import exceptions as ice
from starlette.responses import JSONResponse

from mixed_iceberg.exceptions import (
    ConfigError,
    MissingFileError,
    NamespaceExistsError,
    NamespaceNotEmptyError,
    NoSuchNamespaceError,
    NoSuchTableError,
    RequestRefusedError,
    TableExistsError,
)

__all__ = ["error_response", "refuse", "response_for"]

log = logging.getLogger(__name__)

_KINDS = {
    "bad-request": (400, "BadRequestException"),
    "unauthorized": (401, "NotAuthorizedException"),
    "forbidden": (403, "ForbiddenException"),
    "not-found": (404, "NotFoundException"),
    "unsupported": (406, "UnsupportedOperationException"),
    "invalid": (422, "UnprocessableEntityException"),
    "unavailable": (503, "ServiceUnavailableException"),
}


def error_response(status: int, error_type: str, message: str) -> JSONResponse:
    """The spec's error body with ``status``."""
    return JSONResponse({"error": {"message": message, "type": error_type, "code": status}}, status_code=status)


def refuse(message: str, kind: str = "bad-request") -> NoReturn:
    """Raise :class:`RequestRefusedError` (a shorthand for the routes)."""
    raise RequestRefusedError(message, kind)


def _missing_file(exc: BaseException) -> str:
    path = getattr(exc, "filename", None) or getattr(exc, "path", None)
    return f"Failed to open input stream for file: {path}" if path else f"Failed to open input stream: {exc}"


def response_for(exc: BaseException) -> JSONResponse:
    """The spec's error response for ``exc`` (unexpected errors logged with their traceback)."""
    if isinstance(exc, RequestRefusedError):
        status, error_type = _KINDS.get(exc.kind, _KINDS["bad-request"])
        return error_response(status, error_type, str(exc))
    if isinstance(exc, ice.NoSuchNamespaceError | NoSuchNamespaceError):
        return error_response(404, "NoSuchNamespaceException", str(exc))
    if isinstance(exc, ice.NoSuchTableError | NoSuchTableError):
        return error_response(404, "NoSuchTableException", str(exc))
    if isinstance(exc, MissingFileError | FileNotFoundError):
        return error_response(404, "NotFoundException", _missing_file(exc))
    if isinstance(exc, ice.TableAlreadyExistsError | ice.NamespaceAlreadyExistsError | TableExistsError | NamespaceExistsError):
        return error_response(409, "AlreadyExistsException", str(exc))
    if isinstance(exc, ice.NamespaceNotEmptyError | NamespaceNotEmptyError):
        return error_response(409, "NamespaceNotEmptyException", str(exc))
    if isinstance(exc, ice.CommitFailedException):
        return error_response(409, "CommitFailedException", str(exc))
    if isinstance(exc, ValidationError):
        return error_response(400, "BadRequestException", f"Malformed request: {_validation_message(exc)}")
    if isinstance(exc, ConfigError):
        # The message may hold the catalog's URI (a database password): the log has it, the client does not.
        ref = uuid.uuid4().hex[:12]
        log.error("catalog unavailable (ref %s): %s", ref, exc)
        return error_response(503, "ServiceUnavailableException", f"the catalog cannot be opened; see the server log (ref {ref})")
    ref = uuid.uuid4().hex[:12]
    log.error("unexpected error (ref %s)", ref, exc_info=exc)
    return error_response(500, "ServerErrorException", f"internal error; see the server log (ref {ref})")


def _validation_message(exc: ValidationError) -> str:
    parts = []
    for error in exc.errors(include_url=False, include_input=False)[:5]:
        where = ".".join(str(part) for part in error["loc"]) or "body"
        parts.append(f"{where}: {error['msg']}")
    return "; ".join(parts)
