"""Names and locations a request may use: no path-like names, nothing outside the warehouse.

A namespace or table name becomes part of a folder (``<warehouse>/<ns>/<table>``) and of a
row of the SQL catalog, which joins namespace levels with ``.``: a name that is empty, ``.``
or ``..``, that holds ``/``, ``\\``, a ``.`` or a control character would either escape the
warehouse or be ambiguous, and is refused. A location (a table's, a namespace's, a metadata
file's, or one of the ``write.*.path`` properties that steer where files go) must lie inside
the catalog's warehouse, compared after normalising the URI (``file:/tmp`` is ``file:///tmp``
is ``/tmp``; ``s3a://`` is ``s3://``) and refusing any ``..`` segment.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping, Sequence
from urllib.parse import unquote, urlsplit

from mixed_iceberg.service.errors import refuse

__all__ = [
    "LOCATION_PROPERTIES",
    "check_location",
    "check_name",
    "check_namespace",
    "check_properties_locations",
    "check_raw_path",
    "namespace_from_path",
    "within",
]

#: Table properties naming where files are written (Iceberg's ``TableProperties``).
LOCATION_PROPERTIES = (
    "write.data.path",
    "write.metadata.path",
    "write.object-storage.path",
    "write.folder-storage.path",
)

_NAMESPACE_SEPARATOR = "\x1f"
_S3_SCHEMES = {"s3", "s3a", "s3n"}


def check_name(name: str, what: str = "table name") -> str:
    """``name`` if it is a safe single name, else a 400."""
    if not isinstance(name, str) or not name.strip():
        refuse(f"Invalid {what}: empty")
    if name in (".", "..") or any(ch in name for ch in "/\\.") or any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in name):
        refuse(f"Invalid {what} {name!r}: a name may not be '.', '..', or hold '/', '\\\\', '.' or control characters")
    return name


def check_namespace(levels: Sequence[str]) -> tuple[str, ...]:
    """The namespace as a tuple of safe levels, else a 400 (the empty namespace included)."""
    if not isinstance(levels, list | tuple) or not levels:
        refuse("Invalid namespace: empty")
    return tuple(check_name(level, "namespace level") for level in levels)


def namespace_from_path(raw: str) -> tuple[str, ...]:
    """The namespace of a path parameter: levels separated by the unit separator (``%1F``)."""
    return check_namespace(raw.split(_NAMESPACE_SEPARATOR))


def check_raw_path(raw_path: bytes) -> None:
    """Refuse a request path whose segments decode to something path-like (``%2F``, ``..``)
    before routing: the router sees ``%2F`` already decoded to ``/``."""
    for segment in raw_path.decode("latin-1").split("/"):
        decoded = unquote(segment)
        if decoded in (".", "..") or "/" in decoded or "\\" in decoded:
            refuse(f"Invalid path segment {segment!r}: a name may not be '.', '..', or hold '/' or '\\\\'")


def _normalised(location: str) -> tuple[str, str] | None:
    """(scheme, path) of a location, or None when it cannot be judged (a ``..`` segment, no path)."""
    parts = urlsplit(location)
    scheme = (parts.scheme or "file").lower()
    if len(scheme) == 1:  # a Windows drive letter is not a scheme
        return None
    if scheme in _S3_SCHEMES:
        scheme, path = "s3", f"{parts.netloc}/{parts.path.lstrip('/')}"
    elif scheme == "file":
        if parts.netloc not in ("", "localhost"):
            return None
        path = parts.path
    else:
        path = f"{parts.netloc}/{parts.path.lstrip('/')}"
    path = unquote(path)
    if not path or any(segment == ".." for segment in path.split("/")):
        return None
    normal = posixpath.normpath(path)
    return scheme, normal.rstrip("/") or "/"


def within(location: str, warehouse: str) -> bool:
    """Whether ``location`` is ``warehouse`` or inside it."""
    inner, outer = _normalised(location), _normalised(warehouse)
    if inner is None or outer is None or inner[0] != outer[0]:
        return False
    if outer[1] == "/":
        return True
    return inner[1] == outer[1] or inner[1].startswith(outer[1] + "/")


def check_location(location: str, warehouse: str, what: str) -> str:
    """``location`` if inside ``warehouse``, else a 403 naming both."""
    if not isinstance(location, str) or not within(location, warehouse):
        refuse(f"{what} {location!r} is outside the catalog's warehouse {warehouse}; expected a location inside it", "forbidden")
    return location


def check_properties_locations(properties: Mapping[str, str], warehouse: str, what: str) -> None:
    """Refuse ``write.*.path`` (and a namespace's ``location``) properties outside the warehouse."""
    for key in (*LOCATION_PROPERTIES, "location"):
        if key in properties:
            check_location(properties[key], warehouse, f"{what} property {key}")
