"""DuckDB as an independent Iceberg reader, working offline.

DuckDB 1.5.5 cannot download extensions here, so the iceberg, avro and httpfs extensions come
from their PyPI wheels (``duckdb-extension-*``) and are loaded by file path with automatic
install and load switched off. A table read through :func:`read_iceberg` is the oracle that
our own readers are checked against: it shares no code with pyiceberg or this project.

Example:
    >>> table = read_iceberg(tbl.metadata_location)  # doctest: +SKIP
"""

from __future__ import annotations

import importlib
from pathlib import Path

import duckdb
import pyarrow as pa

from tests.support.services import S3Endpoint

__all__ = ["EXTENSIONS", "attach_rest", "connect", "extension_path", "read_iceberg"]

# Load order matters: iceberg needs avro (manifests) and, for s3:// paths, httpfs.
EXTENSIONS = ("avro", "httpfs", "iceberg")


def extension_path(name: str) -> Path:
    """The ``<name>.duckdb_extension`` file shipped by the ``duckdb-extension-<name>`` wheel."""
    module = importlib.import_module(f"duckdb_extension_{name}")
    assert module.__file__ is not None
    path = Path(module.__file__).parent / "extensions" / f"v{duckdb.__version__}" / f"{name}.duckdb_extension"
    if not path.is_file():
        raise FileNotFoundError(
            f"expected the {name} extension for DuckDB {duckdb.__version__} at {path}, found nothing; "
            f"the duckdb and duckdb-extension-{name} versions must match"
        )
    return path


def connect(s3: S3Endpoint | None = None) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB with the Iceberg extensions loaded from disk and nothing fetched.

    Args:
        s3: when given, an S3 secret for this endpoint (path-style URLs) is registered.
    """
    con = duckdb.connect(
        config={
            "autoinstall_known_extensions": False,
            "autoload_known_extensions": False,
        }
    )
    for name in EXTENSIONS:
        con.execute(f"LOAD '{extension_path(name)}'")
    if s3 is not None:
        options = {"KEY_ID": s3.access_key, "SECRET": s3.secret_key, "REGION": s3.region, "ENDPOINT": s3.host_port}
        body = ", ".join(f"{key} {_quote(value)}" for key, value in options.items())
        use_ssl = "true" if s3.url.startswith("https://") else "false"
        con.execute(f"CREATE SECRET mixed_iceberg_s3 (TYPE s3, {body}, URL_STYLE 'path', USE_SSL {use_ssl})")
    return con


def _quote(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def read_iceberg(metadata_location: str, s3: S3Endpoint | None = None) -> pa.Table:
    """All rows of the Iceberg table snapshot described by ``metadata_location``.

    Args:
        metadata_location: path or ``s3://`` URL of a ``*.metadata.json`` (e.g.
            ``tbl.metadata_location``); DuckDB reads its current snapshot, applying delete files.
        s3: credentials for ``s3://`` locations.
    """
    con = connect(s3)
    try:
        return con.execute("SELECT * FROM iceberg_scan(?)", [metadata_location]).to_arrow_table()
    finally:
        con.close()


def attach_rest(
    endpoint: str, warehouse: str, *, token: str | None = None, client: tuple[str, str] | None = None, alias: str = "lake"
) -> list[str]:
    """The statements that attach an Iceberg REST catalog as ``alias``, authenticated with a
    bearer ``token`` or OAuth2 ``client`` credentials (docs/rest.md shows them; a unit test keeps
    the two equal).

    Args:
        endpoint: the server's address, e.g. ``http://127.0.0.1:8181``.
        warehouse: the catalog to ask ``/v1/config`` for (``serve``: its name).
        token: a bearer token.
        client: ``(client id, secret)`` for the client-credentials exchange at
            ``<endpoint>/v1/oauth/tokens`` (DuckDB sends them as HTTP Basic authentication).
    """
    if client is not None:
        client_id, secret = client
        options = (
            f"CLIENT_ID {_quote(client_id)}, CLIENT_SECRET {_quote(secret)}, "
            f"OAUTH2_SERVER_URI {_quote(endpoint + '/v1/oauth/tokens')}"
        )
    elif token is not None:
        options = f"TOKEN {_quote(token)}"
    else:
        raise ValueError("expected a token or client credentials, found neither")
    return [
        f"CREATE SECRET rest_auth (TYPE iceberg, {options});",
        f"ATTACH {_quote(warehouse)} AS {alias} (TYPE iceberg, ENDPOINT {_quote(endpoint)}, SECRET rest_auth);",
    ]
