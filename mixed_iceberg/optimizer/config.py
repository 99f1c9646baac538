"""``conf/optimizer.yaml``: the system database, the catalogs served, and the optimizer groups.

Groups are declared in Amoro's shape (``optimizer_groups:`` with ``name``, ``container`` and
``properties:``); each group property is an :class:`~mixed_iceberg.config.registry.Option` of the
registry below, so an unknown key or a bad value is refused with the same kind of message as
a table property's, naming the group. ``${VAR}`` and ``${VAR:-default}`` are expanded as in
``catalogs.yaml``; a relative ``sqlite:///`` path resolves against ``MIXED_ICEBERG_HOME`` (the
folder holding ``conf/``).

>>> group = GroupConfig.of("default", "local", {"scheduling-policy": "balanced"})
>>> group.policy.value, group.properties.refresh_interval_ms
('balanced', 10000)
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from mixed_iceberg.catalog.config import _interpolate, default_config_path
from mixed_iceberg.config.kinds import Container, SchedulingPolicy
from mixed_iceberg.config.registry import (
    Option,
    is_non_negative,
    is_positive,
    parse_bool,
    parse_duration,
    parse_duration_text,
    parse_enum,
    parse_int,
)
from mixed_iceberg.exceptions import ConfigError, PropertyError

__all__ = ["GROUP_OPTIONS", "Container", "GroupConfig", "GroupProperties", "OptimizerConfig", "load_optimizer_config"]


GROUP_OPTIONS: dict[str, Option[Any]] = {}


def _group_option(option: Option[Any]) -> Option[Any]:
    GROUP_OPTIONS[option.key] = option
    return option


def _ms(raw: str) -> int:
    return int(parse_duration(parse_duration_text(raw)).total_seconds() * 1000)


POLICY = _group_option(
    Option(
        "scheduling-policy",
        parse_enum(SchedulingPolicy),
        SchedulingPolicy.QUOTA,
        "quota: a table's self-optimizing.quota bounds its share of the group's threads; balanced: least "
        "recently optimized table first.",
    )
)
MAX_INPUT_PER_THREAD = _group_option(
    Option(
        "max-input-file-size-per-thread",
        parse_int,
        536870912,
        "Bytes of input one planning round may hand each of the group's threads (Amoro's budget).",
        is_positive,
        "a positive byte count",
    )
)
REFRESH_INTERVAL = _group_option(
    Option(
        "refresh-interval",
        _ms,
        10_000,
        "How often the group's tables are discovered and evaluated (Amoro's refresh-tables.interval).",
        is_positive,
        "a positive duration",
    )
)
HEARTBEAT_INTERVAL = _group_option(
    Option(
        "heartbeat-interval",
        _ms,
        2_000,
        "How often an optimizer renews its heartbeat and leases.",
        is_positive,
        "a positive duration",
    )
)
HEARTBEAT_TIMEOUT = _group_option(
    Option(
        "heartbeat-timeout",
        _ms,
        20_000,
        "An optimizer silent this long is dead: its tasks go back to PLANNED and its tables to the others.",
        is_positive,
        "a positive duration",
    )
)
TASK_ACK_TIMEOUT = _group_option(
    Option(
        "task-ack-timeout",
        _ms,
        30_000,
        "A task scheduled but not acked this long is scheduled again.",
        is_positive,
        "a positive duration",
    )
)
TASK_EXECUTE_TIMEOUT = _group_option(
    Option(
        "task-execute-timeout",
        _ms,
        3_600_000,
        "A task running this long is taken back and retried (counted as a failure).",
        is_positive,
        "a positive duration",
    )
)
PLANNING_PARALLELISM = _group_option(
    Option("max-planning-parallelism", parse_int, 2, "Tables planned at once by one optimizer.", is_positive, "a positive count")
)
MAINTENANCE_INTERVAL = _group_option(
    Option(
        "maintenance-interval",
        _ms,
        3_600_000,
        "How often each table's maintenance (snapshot expiry, change TTL, orphan files) runs; 0: never.",
        is_non_negative,
        "a duration >= 0",
    )
)
QUOTA_LOOK_BACK = _group_option(
    Option(
        "quota-look-back",
        _ms,
        3_600_000,
        "Window over which a table's executor time is compared with its quota (Amoro: 1 h).",
        is_positive,
        "a positive duration",
    )
)
BREAK_QUOTA = _group_option(
    Option("break-quota-limit-enabled", parse_bool, True, "Hand out tasks over quota when nothing else waits.")
)
FAILURE_BACKOFF = _group_option(
    Option(
        "failure-backoff",
        _ms,
        30_000,
        "A table whose optimizing failed is planned again after this, doubled per consecutive failure (at most 1 h).",
        is_positive,
        "a positive duration",
    )
)


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupProperties:
    """A group's properties, parsed once."""

    policy: SchedulingPolicy
    max_input_per_thread: int
    refresh_interval_ms: int
    heartbeat_interval_ms: int
    heartbeat_timeout_ms: int
    task_ack_timeout_ms: int
    task_execute_timeout_ms: int
    planning_parallelism: int
    maintenance_interval_ms: int
    quota_look_back_ms: int
    break_quota: bool
    failure_backoff_ms: int

    @classmethod
    def parse(cls, properties: Mapping[str, str], group: str) -> GroupProperties:
        """Raises ConfigError naming the group, the key and the value (an unknown key gets the closest known one)."""
        owner = f"optimizer group {group!r}"
        for key in properties:
            if key not in GROUP_OPTIONS:
                close = difflib.get_close_matches(key, list(GROUP_OPTIONS), n=1)
                hint = f"; did you mean {close[0]!r}?" if close else ""
                raise ConfigError(f"{owner}: unknown property {key!r}{hint}")
        text = dict(properties)
        try:
            parsed = cls(
                policy=POLICY.read(text, owner=owner),
                max_input_per_thread=MAX_INPUT_PER_THREAD.read(text, owner=owner),
                refresh_interval_ms=REFRESH_INTERVAL.read(text, owner=owner),
                heartbeat_interval_ms=HEARTBEAT_INTERVAL.read(text, owner=owner),
                heartbeat_timeout_ms=HEARTBEAT_TIMEOUT.read(text, owner=owner),
                task_ack_timeout_ms=TASK_ACK_TIMEOUT.read(text, owner=owner),
                task_execute_timeout_ms=TASK_EXECUTE_TIMEOUT.read(text, owner=owner),
                planning_parallelism=PLANNING_PARALLELISM.read(text, owner=owner),
                maintenance_interval_ms=MAINTENANCE_INTERVAL.read(text, owner=owner),
                quota_look_back_ms=QUOTA_LOOK_BACK.read(text, owner=owner),
                break_quota=BREAK_QUOTA.read(text, owner=owner),
                failure_backoff_ms=FAILURE_BACKOFF.read(text, owner=owner),
            )
        except PropertyError as exc:
            raise ConfigError(str(exc)) from exc
        if parsed.heartbeat_timeout_ms <= parsed.heartbeat_interval_ms:
            raise ConfigError(
                f"{owner}: expected heartbeat-timeout above heartbeat-interval, found "
                f"{parsed.heartbeat_timeout_ms} ms <= {parsed.heartbeat_interval_ms} ms"
            )
        return parsed


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupConfig:
    """One optimizer group."""

    name: str
    container: Container
    properties: GroupProperties
    raw_properties: Mapping[str, str]

    @property
    def policy(self) -> SchedulingPolicy:
        return self.properties.policy

    @classmethod
    def of(cls, name: str, container: str = "local", properties: Mapping[str, Any] | None = None) -> GroupConfig:
        """Raises ConfigError on a bad container, key or value."""
        if not name or not isinstance(name, str):
            raise ConfigError(f"optimizer group: expected a non-empty name, found {name!r}")
        try:
            kind = Container(str(container).lower())
        except ValueError:
            raise ConfigError(f"optimizer group {name!r}: container: expected local or flink, found {container!r}") from None
        raw = {str(k): str(v).lower() if isinstance(v, bool) else str(v) for k, v in (properties or {}).items()}
        return cls(name=name, container=kind, properties=GroupProperties.parse(raw, name), raw_properties=raw)


@dataclass(frozen=True, slots=True, kw_only=True)
class OptimizerConfig:
    """The whole file: where the system database is, which catalogs are served, the groups."""

    system_database: str
    #: Catalog names, each with properties that override (or replace) its catalogs.yaml entry.
    catalogs: Mapping[str, Mapping[str, str]]
    catalog_config: str | None
    groups: Mapping[str, GroupConfig]
    #: Flink settings of the PyFlink job (``flink:``), on top of its own; the local container ignores them.
    flink: Mapping[str, str] = field(default_factory=dict)

    def group(self, name: str) -> GroupConfig:
        """Raises ConfigError for a group the file does not declare."""
        found = self.groups.get(name)
        if found is None:
            raise ConfigError(f"optimizer config: expected a group named {name!r}, found {sorted(self.groups)}")
        return found


_TOP_KEYS = ("system-database", "catalogs", "catalog-config", "optimizer_groups", "flink")


def _resolve_sqlite(url: str, home: Path) -> str:
    if url.startswith("sqlite:///") and not url.startswith("sqlite:////"):
        db = home / url.removeprefix("sqlite:///")
        db.parent.mkdir(parents=True, exist_ok=True)
        return f"sqlite:///{db}"
    return url


def parse_optimizer_config(raw: Mapping[str, Any], where: str = "optimizer config", home: Path | None = None) -> OptimizerConfig:
    """Validate an already-loaded mapping (the YAML file's content).

    Raises:
        ConfigError: an unknown top-level key, a group without a name, two groups of one name,
            or a bad group property.
    """
    data = _interpolate(dict(raw), where)
    unknown = sorted(set(data) - set(_TOP_KEYS))
    if unknown:
        raise ConfigError(f"{where}: unknown keys {unknown}; expected some of {list(_TOP_KEYS)}")
    base = home or Path(os.environ.get("MIXED_ICEBERG_HOME") or Path.cwd())
    groups: dict[str, GroupConfig] = {}
    for entry in data.get("optimizer_groups") or []:
        if not isinstance(entry, dict):
            raise ConfigError(f"{where}: optimizer_groups: expected a mapping per group, found {entry!r}")
        extra = sorted(set(entry) - {"name", "container", "properties"})
        if extra:
            raise ConfigError(f"{where}: optimizer group {entry.get('name')!r}: unknown keys {extra}")
        group = GroupConfig.of(entry.get("name", ""), entry.get("container", "local"), entry.get("properties"))
        if group.name in groups:
            raise ConfigError(f"{where}: optimizer group {group.name!r} is declared twice")
        groups[group.name] = group
    if not groups:
        raise ConfigError(f"{where}: expected at least one entry under optimizer_groups, found none")
    catalogs: dict[str, dict[str, str]] = {}
    entries = data.get("catalogs") or ["local"]
    if not isinstance(entries, list):
        raise ConfigError(f"{where}: catalogs: expected catalog names or {{name, properties}} entries, found {entries!r}")
    for entry in entries:
        if isinstance(entry, str) and entry:
            catalogs[entry] = {}
        elif isinstance(entry, dict) and isinstance(entry.get("name"), str) and set(entry) <= {"name", "properties"}:
            catalogs[entry["name"]] = {str(k): str(v) for k, v in (entry.get("properties") or {}).items()}
        else:
            raise ConfigError(f"{where}: catalogs: expected catalog names or {{name, properties}} entries, found {entry!r}")
    flink = data.get("flink") or {}
    if not isinstance(flink, dict):
        raise ConfigError(f"{where}: flink: expected a mapping of Flink settings, found {flink!r}")
    url = data.get("system-database") or "sqlite:///.warehouse/optimizer.db"
    return OptimizerConfig(
        system_database=_resolve_sqlite(str(url), base),
        catalogs=catalogs,
        catalog_config=data.get("catalog-config"),
        groups=groups,
        flink={str(k): str(v) for k, v in flink.items()},
    )


def default_optimizer_config_path() -> Path:
    """``$MIXED_ICEBERG_OPTIMIZER_CONFIG``, else ``conf/optimizer.yaml`` beside ``conf/catalogs.yaml``."""
    env = os.environ.get("MIXED_ICEBERG_OPTIMIZER_CONFIG")
    return Path(env) if env else default_config_path().parent / "optimizer.yaml"


def load_optimizer_config(path: str | Path | None = None) -> OptimizerConfig:
    """Read ``path`` (default :func:`default_optimizer_config_path`).

    Raises:
        ConfigError: the file cannot be read or parsed, or a value is invalid.
    """
    file = Path(path) if path is not None else default_optimizer_config_path()
    try:
        raw = yaml.safe_load(file.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"optimizer config: cannot read {file}: {exc}") from exc
    if not isinstance(raw, dict):
        raise ConfigError(f"optimizer config {file}: expected a mapping, found {type(raw).__name__}")
    home = Path(os.environ.get("MIXED_ICEBERG_HOME") or file.resolve().parent.parent)
    return parse_optimizer_config(raw, str(file), home)
