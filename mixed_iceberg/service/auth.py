"""Bearer tokens and the OAuth2 client-credentials exchange (``POST /v1/oauth/tokens``).

A request carries ``Authorization: Bearer <token>``; the token is valid when it is one of the
configured tokens, or one this exchange issued and not yet expired. An issued token is
``<client id>.<expiry>.<HMAC-SHA256 of both, keyed by the client's secret>``: any ``serve``
process with the same credentials accepts it (no shared state), and it dies with its client's
secret. Comparisons are constant-time. Without any token or credential configured, no token
is asked for (and ``serve`` then binds only to loopback, :mod:`.settings`).

pyiceberg (``credential="id:secret"``) and Iceberg Java (``credential``) post the
client-credentials form; DuckDB sends the id and secret as HTTP Basic authentication
(``client_secret_basic``), accepted too; Java refreshes with the token-exchange grant, answered the same way
for a valid subject token.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import time
from urllib.parse import parse_qs, unquote_plus

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from mixed_iceberg.service.errors import error_response
from mixed_iceberg.service.settings import ServiceConfig

__all__ = ["TOKEN_PATH", "AuthMiddleware", "TokenAuthority", "exchange_token"]

TOKEN_PATH = "/v1/oauth/tokens"
_TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"


class TokenAuthority:
    """Checks bearer tokens and issues tokens for client credentials."""

    def __init__(self, config: ServiceConfig) -> None:
        self._tokens = [token.encode() for token in config.tokens]
        self._credentials = {client: secret.encode() for client, secret in config.credentials.items()}
        self.ttl = config.auth.token_ttl_seconds
        self.required = config.auth_required

    def _signature(self, client: str, expiry: int) -> str:
        mac = hmac.new(self._credentials[client], f"{client}.{expiry}".encode(), hashlib.sha256)
        return base64.urlsafe_b64encode(mac.digest()).decode().rstrip("=")

    def issue(self, client: str) -> str:
        """A token for ``client`` (which must be configured), valid for ``ttl`` seconds."""
        expiry = int(time.time()) + self.ttl
        encoded = base64.urlsafe_b64encode(client.encode()).decode().rstrip("=")
        return f"{encoded}.{expiry}.{self._signature(client, expiry)}"

    def client_of(self, token: str) -> str | None:
        """The client an issued token belongs to, if it is valid and unexpired."""
        parts = token.split(".")
        if len(parts) != 3 or not parts[1].isdigit():
            return None
        try:
            client = base64.urlsafe_b64decode(parts[0] + "=" * (-len(parts[0]) % 4)).decode()
        except (ValueError, UnicodeDecodeError):
            return None
        expiry = int(parts[1])
        if client not in self._credentials or expiry < time.time():
            return None
        return client if hmac.compare_digest(parts[2], self._signature(client, expiry)) else None

    def valid(self, token: str) -> bool:
        """Whether ``token`` is a configured token or a valid issued one."""
        given = token.encode()
        if any(hmac.compare_digest(given, known) for known in self._tokens):
            return True
        return self.client_of(token) is not None

    def check_client(self, client: str, secret: str) -> bool:
        known = self._credentials.get(client)
        return known is not None and hmac.compare_digest(known, secret.encode())


def _basic_credentials(header: str) -> tuple[str, str]:
    """(client id, secret) of an ``Authorization: Basic`` header, form-urlencoded inside."""
    scheme, _, encoded = header.partition(" ")
    if scheme.lower() != "basic":
        return "", ""
    try:
        decoded = base64.b64decode(encoded.strip(), validate=True).decode("utf-8")
    except (ValueError, UnicodeDecodeError):
        return "", ""
    client, _, secret = decoded.partition(":")
    return unquote_plus(client), unquote_plus(secret)


def _oauth_error(status: int, error: str, description: str) -> JSONResponse:
    return JSONResponse({"error": error, "error_description": description}, status_code=status)


async def exchange_token(request: Request) -> Response:
    """``POST /v1/oauth/tokens``: client credentials (or a valid subject token) for a token."""
    authority: TokenAuthority = request.app.state.authority
    form = {key: values[0] for key, values in parse_qs((await request.body()).decode("utf-8", "replace")).items()}
    grant = form.get("grant_type")
    if grant == "client_credentials":
        client, secret = form.get("client_id", ""), form.get("client_secret", "")
        if not client:  # client_secret_basic (RFC 6749 2.3.1), as DuckDB sends them
            client, secret = _basic_credentials(request.headers.get("authorization", ""))
        if not authority.check_client(client, secret):
            return _oauth_error(401, "invalid_client", "unknown client or wrong secret")
    elif grant == _TOKEN_EXCHANGE:
        found = authority.client_of(form.get("subject_token", ""))
        if found is None:
            return _oauth_error(401, "invalid_client", "the subject token is not valid")
        client = found
    else:
        return _oauth_error(400, "unsupported_grant_type", f"expected client_credentials, found {grant!r}")
    return JSONResponse(
        {
            "access_token": authority.issue(client),
            "token_type": "bearer",
            "expires_in": authority.ttl,
            "issued_token_type": "urn:ietf:params:oauth:token-type:access_token",
        }
    )


class AuthMiddleware:
    """Refuses (401) a request without a valid bearer token when tokens are configured; the
    token exchange itself is open (it checks the client's secret), and so are the paths under
    ``open_prefixes`` (the dashboard's page and assets, which hold no data)."""

    def __init__(self, app: ASGIApp, authority: TokenAuthority, open_prefixes: tuple[str, ...] = ()) -> None:
        self.app = app
        self.authority = authority
        self.open_prefixes = open_prefixes

    def _open(self, path: str) -> bool:
        return path == TOKEN_PATH or any(path == p or path.startswith(p + "/") for p in self.open_prefixes)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not self.authority.required or self._open(scope["path"]):
            await self.app(scope, receive, send)
            return
        header = dict(scope["headers"]).get(b"authorization", b"").decode("latin-1")
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or not token.strip() or not self.authority.valid(token.strip()):
            response = error_response(401, "NotAuthorizedException", "Not authorized: a valid bearer token is required")
            response.headers["WWW-Authenticate"] = "Bearer"
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)
