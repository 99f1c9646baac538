"""The configuration files: one reader and one error shape for ``catalogs.yaml``,
``optimizer.yaml`` and ``ingest.yaml``.

:func:`read_yaml` reads a file and refuses one that is missing, malformed or not a mapping;
:func:`interpolate` expands ``${VAR}`` and ``${VAR:-default}`` in its values. A value that
does not fit its key is a :class:`~mixed_iceberg.exceptions.ConfigError` carrying the file,
the key, the value and what was expected (its ``file``, ``key``, ``value`` and ``expected``),
whatever checked it: :func:`value_error` for the option registry and hand-written rules, which
reads ``<what> <file>: <key>: expected <expected>, found <value>``, and
:func:`validation_error` for a pydantic model, which keeps pydantic's wording of what was
expected (``<key>: <expectation> (found <value>)``, several on one line).

>>> str(value_error("optimizer config", "conf/optimizer.yaml", "optimizer group 'g': property 'x'", "2", "a count"))
"optimizer config conf/optimizer.yaml: optimizer group 'g': property 'x': expected a count, found '2'"
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from mixed_iceberg.exceptions import ConfigError

__all__ = ["MISSING", "interpolate", "read_yaml", "validation_error", "value_error"]

_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")

#: The value of a key that is absent (``found nothing``).
MISSING = object()


def read_yaml(path: Path, what: str) -> dict[str, Any]:
    """The mapping in the YAML file ``path`` (empty for an empty file), uninterpolated.

    Args:
        path: the file.
        what: what the file is, for errors (``"ingest config"``).

    Raises:
        FileNotFoundError: the file does not exist (the caller knows whether that is an error).
        ConfigError: the file cannot be read, is not valid YAML, or holds something else than a mapping.
    """
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise ConfigError(f"{what}: cannot read {path}: {exc.strerror or exc}", file=str(path)) from exc
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{what} {path}: not valid YAML: {' '.join(str(exc).split())}", file=str(path)) from exc
    if document is None:
        return {}
    if not isinstance(document, dict):
        raise ConfigError(f"{what} {path}: expected a mapping, found {type(document).__name__}", file=str(path))
    return document


def interpolate(value: Any, where: str) -> Any:
    """``value`` (a YAML document or part of one) with ``${VAR}`` / ``${VAR:-default}`` expanded
    in every string, and scalars as strings.

    Raises:
        ConfigError: a variable is unset and its reference has no default.
    """
    if isinstance(value, dict):
        return {k: interpolate(v, f"{where}.{k}") for k, v in value.items()}
    if isinstance(value, list):
        return [interpolate(v, where) for v in value]
    if not isinstance(value, str):
        return value if value is None else str(value)

    def replace(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        found = os.environ.get(name)
        if found is not None:
            return found
        if default is not None:
            return default
        raise ConfigError(f"{where}: environment variable {name} is not set and ${{{name}}} has no default")

    return _ENV_REF.sub(replace, value)


def value_error(what: str, file: str | None, key: str, value: object, expected: str) -> ConfigError:
    """The error of a value that does not fit its key, in the shape every configuration file shares."""
    found = "nothing" if value is MISSING else repr(value)
    where = f"{what} {file}" if file else what
    return ConfigError(
        f"{where}: {key}: expected {expected}, found {found}",
        file=file,
        key=key,
        value=None if value is MISSING else value,
        expected=expected,
    )


def validation_error(what: str, file: str | None, exc: ValidationError, *, prefix: str = "") -> ConfigError:
    """A pydantic model's errors on one line, each as ``key: what was expected (found value)``
    (the key dotted, under ``prefix``); the first one's key, value and expectation are the
    error's fields. One line: a job's client prints it as its only output."""
    errors = exc.errors(include_url=False)
    parts = []
    for error in errors:
        found = "" if error["type"] == "missing" or isinstance(error["input"], dict) else f" (found {error['input']!r})"
        parts.append(f"{_key(error['loc'], prefix)}: {error['msg']}{found}")
    first = errors[0]
    return ConfigError(
        f"{what} {file}: {'; '.join(parts)}" if file else f"{what}: {'; '.join(parts)}",
        file=file,
        key=_key(first["loc"], prefix),
        value=None if first["type"] == "missing" else first["input"],
        expected=str(first["msg"]),
    )


def _key(loc: tuple[int | str, ...], prefix: str) -> str:
    return ".".join([*([prefix] if prefix else []), *(str(part) for part in loc)]) or "(top level)"
