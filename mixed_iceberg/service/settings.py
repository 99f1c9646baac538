"""``conf/service.yaml``: where ``mixed-iceberg serve`` listens, what it serves, who may call it.

Tokens and client secrets are never written in the file: it names an environment variable or a
file holding them (comma- or newline-separated), read once here. ``repr`` of the parsed
configuration shows how many there are, never their values.
"""

from __future__ import annotations

import ipaddress
import os
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from mixed_iceberg.config.files import interpolate, read_yaml, validation_error
from mixed_iceberg.exceptions import ConfigError

__all__ = ["AuthConfig", "ServiceConfig", "load_service_config"]

_WHAT = "service config"


class AuthConfig(BaseModel):
    """Where the bearer tokens and OAuth2 client credentials come from."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    tokens_env: str | None = Field(default="MIXED_ICEBERG_REST_TOKENS", alias="tokens-env")
    tokens_file: str | None = Field(default=None, alias="tokens-file")
    credentials_env: str | None = Field(default="MIXED_ICEBERG_REST_CREDENTIALS", alias="credentials-env")
    credentials_file: str | None = Field(default=None, alias="credentials-file")
    token_ttl_seconds: int = Field(default=3600, alias="token-ttl-seconds", gt=0)


class ServiceConfig(BaseModel):
    """The parsed ``service.yaml``, secrets resolved (``tokens``, ``credentials``)."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    host: str = "127.0.0.1"
    port: int = Field(default=8181, ge=0, le=65535)
    catalogs_file: Path | None = Field(default=None, alias="catalogs-file")
    default_catalog: str | None = Field(default=None, alias="default-catalog")
    max_body_bytes: int = Field(default=16 * 1024 * 1024, alias="max-body-bytes", gt=0)
    workers: int = Field(default=1, ge=1, le=64)
    #: The Kafka cluster of the ingest jobs' source topics: GET /metrics exports their lag.
    kafka_bootstrap_servers: str | None = Field(default=None, alias="kafka-bootstrap-servers")
    auth: AuthConfig = AuthConfig()
    tokens: frozenset[str] = Field(default=frozenset(), repr=False)
    credentials: dict[str, str] = Field(default_factory=dict, repr=False)

    @field_validator("kafka_bootstrap_servers")
    @classmethod
    def _empty_is_none(cls, value: str | None) -> str | None:
        return value.strip() or None if value is not None else None

    def __repr__(self) -> str:
        return (
            f"ServiceConfig(host={self.host!r}, port={self.port}, workers={self.workers}, "
            f"catalogs_file={str(self.catalogs_file)!r}, "
            f"tokens={len(self.tokens)}, credentials={len(self.credentials)})"
        )

    __str__ = __repr__

    @property
    def auth_required(self) -> bool:
        """Whether requests need a token (any token or client credential configured)."""
        return bool(self.tokens or self.credentials)

    def secrets(self) -> list[str]:
        """Every configured secret value, for redacting logs."""
        return [*self.tokens, *self.credentials.values()]

    def check_bind(self) -> None:
        """Refuse a non-loopback address without a token (anyone on the network could write).

        Raises:
            ConfigError: ``host`` is not a loopback address and no token is configured.
        """
        if self.auth_required or _is_loopback(self.host):
            return
        raise ConfigError(
            f"{_WHAT}: host {self.host!r} is reachable from other machines and no token is configured; expected "
            f"a loopback host (127.0.0.1) or tokens (auth.tokens-env / auth.credentials-env, see docs/rest.md)"
        )


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _split(text: str) -> list[str]:
    return [part.strip() for line in text.splitlines() for part in line.split(",") if part.strip()]


def _read_secrets(env: str | None, file: str | None, home: Path, what: str) -> list[str]:
    values: list[str] = []
    if env and os.environ.get(env):
        values += _split(os.environ[env])
    if file:
        path = Path(file) if Path(file).is_absolute() else home / file
        try:
            values += _split(path.read_text())
        except OSError as exc:
            raise ConfigError(f"{_WHAT}: auth.{what}-file {path} cannot be read: {exc.strerror or exc}") from exc
    return values


def _credentials(entries: list[str]) -> dict[str, str]:
    found: dict[str, str] = {}
    for entry in entries:
        client_id, sep, secret = entry.partition(":")
        if not sep or not client_id or not secret:
            raise ConfigError(f"{_WHAT}: a client credential: expected 'client-id:secret', found one without ':' or a part")
        found[client_id] = secret
    return found


def load_service_config(path: str | Path | None = None, **overrides: object) -> ServiceConfig:
    """Read ``path`` (default: ``conf/service.yaml`` of the project), then apply ``overrides``
    (keys as in the file, e.g. ``port=0``).

    Raises:
        ConfigError: the file is missing or malformed, a secret file cannot be read, a client
            credential has no ``:``.
    """
    file = Path(path) if path is not None else Path(__file__).resolve().parents[2] / "conf" / "service.yaml"
    try:
        raw = interpolate(read_yaml(file, _WHAT), str(file))
    except FileNotFoundError as exc:
        raise ConfigError(f"{_WHAT}: {file} does not exist; expected a YAML file (see conf/service.yaml)") from exc
    raw.update({key: value for key, value in overrides.items() if value is not None})
    home = Path(os.environ.get("MIXED_ICEBERG_HOME") or file.resolve().parent.parent)
    try:
        config = ServiceConfig.model_validate(raw)
    except ValidationError as exc:
        raise validation_error(_WHAT, str(file), exc) from exc
    auth = config.auth
    catalogs = config.catalogs_file
    if catalogs is not None and not catalogs.is_absolute():
        catalogs = home / catalogs
    return config.model_copy(
        update={
            "catalogs_file": catalogs,
            "tokens": frozenset(_read_secrets(auth.tokens_env, auth.tokens_file, home, "tokens")),
            "credentials": _credentials(_read_secrets(auth.credentials_env, auth.credentials_file, home, "credentials")),
        }
    )
