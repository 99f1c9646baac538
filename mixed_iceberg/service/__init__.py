"""``mixed-iceberg serve``: the catalogs of ``catalogs.yaml`` as an Iceberg REST catalog.

The top layer beside ``cli`` (``.importlinter``): it may import anything below, nothing below
imports it. See docs/rest.md for the endpoints, the tokens and the keyed-table rules.
"""

from __future__ import annotations

from mixed_iceberg.service.app import create_app
from mixed_iceberg.service.server import serve
from mixed_iceberg.service.settings import ServiceConfig, load_service_config

__all__ = ["ServiceConfig", "create_app", "load_service_config", "serve"]
