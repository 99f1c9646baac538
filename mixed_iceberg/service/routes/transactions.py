"""``POST /v1/{prefix}/transactions/commit``: several tables' changes, all or nothing.

Every table's requirements are checked before anything is written, and the new metadata
locations are swapped in one database transaction (:mod:`mixed_iceberg.service.commits`).
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from mixed_iceberg.service.errors import refuse
from mixed_iceberg.service.keyed import WRITER_HEADER
from mixed_iceberg.service.routes.common import endpoint, json_body, served, state, threaded
from mixed_iceberg.service.routes.tables import table_change

__all__ = ["commit_transaction"]


@endpoint
async def commit_transaction(request: Request) -> Response:
    body = await json_body(request)
    raw = body.get("table-changes")
    if not isinstance(raw, list) or not raw or not all(isinstance(change, dict) for change in raw):
        refuse("Malformed request: table-changes: expected a non-empty list of table commits")
    changes = [table_change(change) for change in raw]
    target = served(request)
    ours = WRITER_HEADER in request.headers
    await threaded(lambda: state(request).committer(target).commit(changes, ours=ours))
    return Response(status_code=204)
