"""Moved to :mod:`mixed_iceberg.config.registry` (issue 34); these names stay importable here
until ``optimizer/service.py``, which is being rewritten, imports them from there."""

from __future__ import annotations

from mixed_iceberg.config.registry import OPT_ENABLED, OPT_GROUP, OPT_PARTIAL, OPT_QUOTA, OPT_RETRIES

__all__ = ["OPT_ENABLED", "OPT_GROUP", "OPT_PARTIAL", "OPT_QUOTA", "OPT_RETRIES"]
