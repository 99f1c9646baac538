"""Load a Compose file as ``docker compose config`` does, without Docker: for tests/unit/core/test_compose.py.

The stages follow compose-go's loader (``loader/loader.go``, the library docker compose uses):

1. YAML, with merge keys (``<<: *anchor``) and no duplicate keys (yaml.v3 refuses them);
2. interpolation of every string value: ``$$``, ``$NAME``, ``${NAME}``, ``${NAME:-word}``,
   ``${NAME-word}``, ``${NAME:?message}``, ``${NAME?message}``, ``${NAME:+word}``,
   ``${NAME+word}``, words nesting further references;
3. the Compose Specification's JSON schema, ``tests/resources/compose-spec.json``: compose-go's
   ``schema/compose-spec.json`` (the file docker compose embeds) at commit
   faa67b213c471d63997f55cc145e6eab9dc3630f, Apache License 2.0, unmodified;
4. the checks that come after the schema: compose-go's ``checkConsistency``
   (``loader/validate.go``: an image or a build per service, defined networks, volumes,
   configs and secrets, healthcheck test forms, depends_on targets and cycles, unique mount
   targets) and the typed decoding of the fields the schema leaves as strings (durations,
   replicas, ports, restart policies, depends_on conditions), which compose-go does when it
   turns the mapping into its model.

Stage 4 covers the fields that docker-compose.yml uses, not every field of the specification.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import yaml
from jsonschema import Draft202012Validator

__all__ = ["SCHEMA", "ComposeError", "InterpolationError", "interpolate", "load_compose", "parse_yaml"]

SCHEMA = Path(__file__).resolve().parents[1] / "resources" / "compose-spec.json"


class ComposeError(ValueError):
    """The file is not one docker compose would load; the message says where and why."""


class InterpolationError(ComposeError):
    """A ``$`` reference is malformed, or a required (``:?``) variable is missing."""


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses a key given twice in one mapping (keys a merge brings in may be overridden)."""

    def flatten_mapping(self, node: yaml.MappingNode) -> None:
        checked: set[int] = self.__dict__.setdefault("_checked", set())
        if id(node) not in checked:  # an anchored mapping is flattened again where it is merged
            checked.add(id(node))
            keys = [self.construct_object(key) for key, _ in node.value if key.tag != "tag:yaml.org,2002:merge"]
            twice = sorted({str(key) for key in keys if keys.count(key) > 1})
            if twice:
                raise ComposeError(f"line {node.start_mark.line + 1}: mapping key(s) {twice} already defined")
        super().flatten_mapping(node)


def parse_yaml(text: str) -> dict[str, Any]:
    try:
        document = yaml.load(text, Loader=_StrictLoader)
    except yaml.YAMLError as exc:
        raise ComposeError(f"not valid YAML: {exc}") from exc
    if not isinstance(document, dict):
        raise ComposeError(f"top-level object must be a mapping, found {type(document).__name__}")
    return document


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_OPERATOR = re.compile(r":?[-?+]")


def interpolate(text: str, env: Mapping[str, str]) -> str:
    """``text`` with its variable references resolved against ``env`` (unset and no default: empty)."""
    out: list[str] = []
    i = 0
    while i < len(text):
        if text[i] != "$":
            out.append(text[i])
            i += 1
        elif text.startswith("$$", i):
            out.append("$")
            i += 2
        elif text.startswith("${", i):
            value, i = _braced(text, i + 2, env)
            out.append(value)
        else:
            name = _NAME.match(text, i + 1)
            if name is None:
                raise InterpolationError(f"invalid interpolation format for {text!r}: a '$' at {i} names no variable")
            out.append(env.get(name.group(), ""))
            i = name.end()
    return "".join(out)


def _braced(text: str, start: int, env: Mapping[str, str]) -> tuple[str, int]:
    name = _NAME.match(text, start)
    if name is None:
        raise InterpolationError(f"invalid interpolation format for {text!r}: '${{' at {start - 2} names no variable")
    value = env.get(name.group())
    if text.startswith("}", name.end()):
        return value or "", name.end() + 1
    operator = _OPERATOR.match(text, name.end())
    if operator is None:
        raise InterpolationError(f"invalid interpolation format for {text!r}: expected '}}', ':-', '-', ':?', '?', ':+' or '+'")
    depth, j = 1, operator.end()
    while j < len(text):
        if text.startswith("$$", j):
            j += 2
            continue
        if text.startswith("${", j):
            depth += 1
            j += 1
        elif text[j] == "}":
            depth -= 1
            if depth == 0:
                break
        j += 1
    else:
        raise InterpolationError(f"invalid interpolation format for {text!r}: unterminated '${{{name.group()}'")
    word = text[operator.end() : j]
    unset = value is None or (operator.group().startswith(":") and value == "")
    kind = operator.group()[-1]
    if kind == "-":
        return (interpolate(word, env) if unset else value or ""), j + 1
    if kind == "?":
        if unset:
            raise InterpolationError(f"required variable {name.group()} is missing a value: {interpolate(word, env)}")
        return value or "", j + 1
    return ("" if unset else interpolate(word, env)), j + 1


def _interpolated(value: Any, env: Mapping[str, str]) -> Any:
    if isinstance(value, dict):
        return {key: _interpolated(item, env) for key, item in value.items()}
    if isinstance(value, list):
        return [_interpolated(item, env) for item in value]
    return interpolate(value, env) if isinstance(value, str) else value


@functools.cache
def _validator() -> Draft202012Validator:
    schema = json.loads(SCHEMA.read_text())
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def load_compose(text: str, env: Mapping[str, str]) -> dict[str, Any]:
    """The interpolated mapping of a Compose file, once it passed every stage.

    Raises:
        ComposeError: the first stage that refuses the file, with every problem it found.
    """
    document = _interpolated(parse_yaml(text), env)
    errors = sorted(_validator().iter_errors(document), key=lambda e: [str(p) for p in e.absolute_path])
    if errors:
        shown = "; ".join(f"{'.'.join(map(str, e.absolute_path)) or '(root)'}: {e.message}" for e in errors)
        raise ComposeError(f"does not match the Compose Specification: {shown}")
    problems = list(_consistency(document))
    if problems:
        raise ComposeError("; ".join(problems))
    return document


# Go's time.ParseDuration: one or more <number><unit>, or a bare 0.
_DURATION = re.compile(r"[-+]?(0|((\d+(\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h))+)")
_PORT = re.compile(r"((?P<ip>[0-9.]+|\[[0-9a-fA-F:]+\]):)?((?P<published>\d+(-\d+)?)?:)?(?P<target>\d+(-\d+)?)(/(tcp|udp|sctp))?")
_RESTART = re.compile(r"no|always|unless-stopped|on-failure(:\d+)?")
_CONDITIONS = ("service_started", "service_healthy", "service_completed_successfully")


def _listed(value: Any) -> dict[str, Any]:
    """A list-or-mapping field (depends_on, networks) as a mapping."""
    if isinstance(value, list):
        return {key: {} for key in value}
    return dict(value or {})


def _consistency(document: Mapping[str, Any]) -> Iterator[str]:
    services: dict[str, dict[str, Any]] = document.get("services") or {}
    declared = {kind: set(document.get(kind) or {}) for kind in ("networks", "volumes", "configs", "secrets")}
    declared["networks"].add("default")
    for name, service in services.items():
        where = f"services.{name}"
        if "image" not in service and "build" not in service:
            yield f"service {name!r} has neither an image nor a build context specified"
        for network in _listed(service.get("networks")):
            if network not in declared["networks"]:
                yield f"service {name!r} refers to undefined network {network}"
        if "network_mode" in service and "networks" in service:
            yield f"service {name} declares mutually exclusive `network_mode` and `networks`"
        for target, options in _listed(service.get("depends_on")).items():
            if target not in services:
                yield f"service {name!r} depends on undefined service {target!r}"
            condition = (options or {}).get("condition", "service_started")
            if condition not in _CONDITIONS:
                yield f"{where}.depends_on.{target}.condition: expected one of {list(_CONDITIONS)}, found {condition!r}"
        health = service.get("healthcheck") or {}
        test = health.get("test")
        if isinstance(test, list) and test and test[0] not in ("CMD", "CMD-SHELL", "NONE"):
            yield f'{where}.healthcheck.test must start either by "CMD", "CMD-SHELL" or "NONE", found {test[0]!r}'
        for key in ("interval", "timeout", "start_period", "start_interval"):
            if key in health and not _DURATION.fullmatch(str(health[key])):
                yield f"{where}.healthcheck.{key}: not a duration: {health[key]!r}"
        replicas = (service.get("deploy") or {}).get("replicas", 1)
        if not re.fullmatch(r"\d+", str(replicas)):
            yield f"{where}.deploy.replicas: expected a non-negative integer, found {replicas!r}"
        elif int(replicas) > 1 and "container_name" in service:
            yield f"{where}: can't set container_name and deploy.replicas as container name must be unique"
        if "restart" in service and not _RESTART.fullmatch(str(service["restart"])):
            yield f"{where}.restart: invalid restart policy {service['restart']!r}"
        for port in service.get("ports") or []:
            if isinstance(port, str) and not _PORT.fullmatch(port):
                yield f"{where}.ports: invalid port mapping {port!r}"
        for kind in ("configs", "secrets"):
            for ref in service.get(kind) or []:
                source = ref if isinstance(ref, str) else ref.get("source")
                if source not in declared[kind]:
                    yield f"service {name!r} refers to undefined {kind[:-1]} {source}"
        targets: set[str] = set()
        for volume in service.get("volumes") or []:
            source, target = _volume(volume)
            if source is not None and source not in declared["volumes"]:
                yield f"service {name!r} refers to undefined volume {source}"
            if target in targets:
                yield f"{where}.volumes: target {target} already mounted"
            targets.add(target)
    yield from _cycles(services)


def _volume(volume: str | Mapping[str, Any]) -> tuple[str | None, str]:
    """(named volume or None for a bind mount / anonymous volume, target)."""
    if isinstance(volume, Mapping):
        named = volume.get("type", "volume") == "volume" and volume.get("source")
        return (str(volume["source"]) if named else None), str(volume.get("target"))
    parts = volume.split(":")
    if len(parts) == 1:
        return None, parts[0]
    source = parts[0]
    return (None if source.startswith((".", "/", "~", "$")) else source), parts[1]


def _cycles(services: Mapping[str, Mapping[str, Any]]) -> Iterator[str]:
    state: dict[str, str] = {}

    def visit(name: str, path: list[str]) -> Iterator[str]:
        if state.get(name) == "done" or name not in services:
            return
        if state.get(name) == "open":
            yield f"dependency cycle detected: {' -> '.join([*path[path.index(name) :], name])}"
            return
        state[name] = "open"
        for target in _listed(services[name].get("depends_on")):
            yield from visit(target, [*path, name])
        state[name] = "done"

    for name in services:
        yield from visit(name, [])
