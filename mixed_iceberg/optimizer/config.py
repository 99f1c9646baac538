"""``conf/optimizer.yaml``: the system database, the catalogs served, and the optimizer groups.

Groups are declared in Amoro's shape (``optimizer_groups:`` with ``name``, ``container`` and
``properties:``); each group property is an :class:`~mixed_iceberg.config.registry.Option` of the
registry below, so an unknown key or a bad value is refused with the same kind of message as
a table property's, naming the file and the group. The file is read, and ``${VAR}`` and
``${VAR:-default}`` expanded, as ``catalogs.yaml`` and ``ingest.yaml`` are
(:mod:`mixed_iceberg.config.files`); a relative ``sqlite:///`` path resolves against ``MIXED_ICEBERG_HOME`` (the
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
from datetime import timedelta
from pathlib import Path
from typing import Any

from mixed_iceberg.catalog.config import default_config_path
from mixed_iceberg.config.files import interpolate, read_yaml, value_error
from mixed_iceberg.config.kinds import Container, SchedulingPolicy
from mixed_iceberg.config.option import (
    Option,
    is_positive,
    is_positive_duration,
    parse_bool,
    parse_enum,
    parse_int,
    parse_timedelta,
)
from mixed_iceberg.exceptions import ConfigError, PropertyError

__all__ = ["GROUP_OPTIONS", "Container", "GroupConfig", "GroupProperties", "OptimizerConfig", "load_optimizer_config"]


GROUP_OPTIONS: dict[str, Option[Any]] = {}
_WHAT = "optimizer config"


def _in(file: str | None) -> str:
    return f" {file}" if file else ""


def _group_option(option: Option[Any]) -> Option[Any]:
    GROUP_OPTIONS[option.key] = option
    return option


def _never_at_zero(raw: str) -> timedelta | None:
    """A duration where 0 means never: None."""
    interval = parse_timedelta(raw)
    return interval or None


def _ms(interval: timedelta) -> int:
    return interval // timedelta(milliseconds=1)


POLICY = _group_option(
    Option(
        key="scheduling-policy",
        parse=parse_enum(SchedulingPolicy),
        default=SchedulingPolicy.QUOTA,
        doc="quota: a table's self-optimizing.quota bounds its share of the group's threads; balanced: least "
        "recently optimized table first.",
    )
)
MAX_INPUT_PER_THREAD = _group_option(
    Option(
        key="max-input-file-size-per-thread",
        parse=parse_int,
        default=536870912,
        doc="Bytes of input one planning round may hand each of the group's threads (Amoro's budget).",
        check=is_positive,
        expectation="a positive byte count",
    )
)
REFRESH_INTERVAL = _group_option(
    Option(
        key="refresh-interval",
        parse=parse_timedelta,
        default=timedelta(milliseconds=10_000),
        doc="How often the group's tables are discovered and evaluated (Amoro's refresh-tables.interval).",
        check=is_positive_duration,
        expectation="a positive duration",
    )
)
HEARTBEAT_INTERVAL = _group_option(
    Option(
        key="heartbeat-interval",
        parse=parse_timedelta,
        default=timedelta(milliseconds=2_000),
        doc="How often an optimizer renews its heartbeat and leases.",
        check=is_positive_duration,
        expectation="a positive duration",
    )
)
HEARTBEAT_TIMEOUT = _group_option(
    Option(
        key="heartbeat-timeout",
        parse=parse_timedelta,
        default=timedelta(milliseconds=20_000),
        doc="An optimizer silent this long is dead: its tasks go back to PLANNED and its tables to the others.",
        check=is_positive_duration,
        expectation="a positive duration",
    )
)
TASK_ACK_TIMEOUT = _group_option(
    Option(
        key="task-ack-timeout",
        parse=parse_timedelta,
        default=timedelta(milliseconds=30_000),
        doc="A task scheduled but not acked this long is scheduled again.",
        check=is_positive_duration,
        expectation="a positive duration",
    )
)
TASK_EXECUTE_TIMEOUT = _group_option(
    Option(
        key="task-execute-timeout",
        parse=parse_timedelta,
        default=timedelta(milliseconds=3_600_000),
        doc="A task running this long is taken back and retried (counted as a failure).",
        check=is_positive_duration,
        expectation="a positive duration",
    )
)
PLANNING_PARALLELISM = _group_option(
    Option(
        key="max-planning-parallelism",
        parse=parse_int,
        default=2,
        doc="Tables planned at once by one optimizer.",
        check=is_positive,
        expectation="a positive count",
    )
)
MAINTENANCE_INTERVAL = _group_option(
    Option(
        key="maintenance-interval",
        parse=_never_at_zero,
        default=timedelta(hours=1),
        doc="How often each table's maintenance (snapshot expiry, change TTL, orphan files) runs; 0: never.",
    )
)
QUOTA_LOOK_BACK = _group_option(
    Option(
        key="quota-look-back",
        parse=parse_timedelta,
        default=timedelta(milliseconds=3_600_000),
        doc="Window over which a table's executor time is compared with its quota (Amoro: 1 h).",
        check=is_positive_duration,
        expectation="a positive duration",
    )
)
BREAK_QUOTA = _group_option(
    Option(
        key="break-quota-limit-enabled", parse=parse_bool, default=True, doc="Hand out tasks over quota when nothing else waits."
    )
)
FAILURE_BACKOFF = _group_option(
    Option(
        key="failure-backoff",
        parse=parse_timedelta,
        default=timedelta(milliseconds=30_000),
        doc="A table whose optimizing failed is planned again after this, doubled per consecutive failure (at most 1 h).",
        check=is_positive_duration,
        expectation="a positive duration",
    )
)


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupProperties:
    """A group's properties, parsed once: durations as :class:`~datetime.timedelta`, and
    ``maintenance_interval`` None when maintenance never runs.

    The ``*_ms`` properties give the durations in milliseconds, for the service's arithmetic on
    epoch milliseconds."""

    policy: SchedulingPolicy
    max_input_per_thread: int
    refresh_interval: timedelta
    heartbeat_interval: timedelta
    heartbeat_timeout: timedelta
    task_ack_timeout: timedelta
    task_execute_timeout: timedelta
    planning_parallelism: int
    maintenance_interval: timedelta | None
    quota_look_back: timedelta
    break_quota: bool
    failure_backoff: timedelta

    @property
    def refresh_interval_ms(self) -> int:
        return _ms(self.refresh_interval)

    @property
    def heartbeat_interval_ms(self) -> int:
        return _ms(self.heartbeat_interval)

    @property
    def heartbeat_timeout_ms(self) -> int:
        return _ms(self.heartbeat_timeout)

    @property
    def task_ack_timeout_ms(self) -> int:
        return _ms(self.task_ack_timeout)

    @property
    def task_execute_timeout_ms(self) -> int:
        return _ms(self.task_execute_timeout)

    @property
    def maintenance_interval_ms(self) -> int:
        """0 when maintenance never runs."""
        return 0 if self.maintenance_interval is None else _ms(self.maintenance_interval)

    @property
    def quota_look_back_ms(self) -> int:
        return _ms(self.quota_look_back)

    @property
    def failure_backoff_ms(self) -> int:
        return _ms(self.failure_backoff)

    @classmethod
    def parse(cls, properties: Mapping[str, str], group: str, *, file: str | None = None) -> GroupProperties:
        """Raises ConfigError naming the file, the group, the key and the value (an unknown key
        gets the closest known one)."""
        owner = f"optimizer group {group!r}"
        for key in properties:
            if key not in GROUP_OPTIONS:
                close = difflib.get_close_matches(key, list(GROUP_OPTIONS), n=1)
                hint = f"; did you mean {close[0]!r}?" if close else ""
                raise ConfigError(f"{_WHAT}{_in(file)}: {owner}: unknown property {key!r}{hint}", file=file, key=key)
        text = dict(properties)
        try:
            parsed = cls(
                policy=POLICY.read(text, owner=owner),
                max_input_per_thread=MAX_INPUT_PER_THREAD.read(text, owner=owner),
                refresh_interval=REFRESH_INTERVAL.read(text, owner=owner),
                heartbeat_interval=HEARTBEAT_INTERVAL.read(text, owner=owner),
                heartbeat_timeout=HEARTBEAT_TIMEOUT.read(text, owner=owner),
                task_ack_timeout=TASK_ACK_TIMEOUT.read(text, owner=owner),
                task_execute_timeout=TASK_EXECUTE_TIMEOUT.read(text, owner=owner),
                planning_parallelism=PLANNING_PARALLELISM.read(text, owner=owner),
                maintenance_interval=MAINTENANCE_INTERVAL.read(text, owner=owner),
                quota_look_back=QUOTA_LOOK_BACK.read(text, owner=owner),
                break_quota=BREAK_QUOTA.read(text, owner=owner),
                failure_backoff=FAILURE_BACKOFF.read(text, owner=owner),
            )
        except PropertyError as exc:
            raise value_error(_WHAT, file, f"{owner}: property {exc.key!r}", exc.value, exc.expected or "") from exc
        if parsed.heartbeat_timeout <= parsed.heartbeat_interval:
            raise value_error(
                _WHAT,
                file,
                f"{owner}: property {HEARTBEAT_TIMEOUT.key!r}",
                text.get(HEARTBEAT_TIMEOUT.key, HEARTBEAT_TIMEOUT.default_text),
                f"heartbeat-timeout above heartbeat-interval ({parsed.heartbeat_interval_ms} ms)",
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
    def of(
        cls, name: str, container: str = "local", properties: Mapping[str, Any] | None = None, *, file: str | None = None
    ) -> GroupConfig:
        """Raises ConfigError on a bad container, key or value (naming ``file``, where it is from)."""
        if not name or not isinstance(name, str):
            raise value_error(_WHAT, file, "optimizer group: name", name, "a non-empty name")
        try:
            kind = Container(str(container).lower())
        except ValueError:
            raise value_error(_WHAT, file, f"optimizer group {name!r}: container", container, "local or flink") from None
        raw = {str(k): str(v).lower() if isinstance(v, bool) else str(v) for k, v in (properties or {}).items()}
        return cls(name=name, container=kind, properties=GroupProperties.parse(raw, name, file=file), raw_properties=raw)


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
    file = None if where == _WHAT else where
    data = interpolate(dict(raw), where)
    unknown = sorted(set(data) - set(_TOP_KEYS))
    if unknown:
        raise ConfigError(f"{where}: unknown keys {unknown}; expected some of {list(_TOP_KEYS)}")
    base = home or Path(os.environ.get("MIXED_ICEBERG_HOME") or Path.cwd())
    groups: dict[str, GroupConfig] = {}
    for entry in data.get("optimizer_groups") or []:
        if not isinstance(entry, dict):
            raise value_error(_WHAT, file, "optimizer_groups", entry, "a mapping per group")
        extra = sorted(set(entry) - {"name", "container", "properties"})
        if extra:
            raise ConfigError(f"{where}: optimizer group {entry.get('name')!r}: unknown keys {extra}")
        group = GroupConfig.of(entry.get("name", ""), entry.get("container", "local"), entry.get("properties"), file=file)
        if group.name in groups:
            raise ConfigError(f"{where}: optimizer group {group.name!r} is declared twice")
        groups[group.name] = group
    if not groups:
        raise ConfigError(f"{where}: expected at least one entry under optimizer_groups, found none")
    catalogs: dict[str, dict[str, str]] = {}
    entries = data.get("catalogs") or ["local"]
    if not isinstance(entries, list):
        raise value_error(_WHAT, file, "catalogs", entries, "catalog names or {name, properties} entries")
    for entry in entries:
        if isinstance(entry, str) and entry:
            catalogs[entry] = {}
        elif isinstance(entry, dict) and isinstance(entry.get("name"), str) and set(entry) <= {"name", "properties"}:
            catalogs[entry["name"]] = {str(k): str(v) for k, v in (entry.get("properties") or {}).items()}
        else:
            raise value_error(_WHAT, file, "catalogs", entry, "catalog names or {name, properties} entries")
    flink = data.get("flink") or {}
    if not isinstance(flink, dict):
        raise value_error(_WHAT, file, "flink", flink, "a mapping of Flink settings")
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
        raw = read_yaml(file, _WHAT)
    except FileNotFoundError as exc:
        raise ConfigError(f"{_WHAT}: cannot read {file}: {exc.strerror or exc}", file=str(file)) from exc
    home = Path(os.environ.get("MIXED_ICEBERG_HOME") or file.resolve().parent.parent)
    return parse_optimizer_config(raw, str(file), home)
