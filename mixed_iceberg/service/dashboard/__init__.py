"""The dashboard of ``mixed-iceberg serve`` (docs/dashboard.md): a page and its JSON API.

* :mod:`.source`: the lists' data without loading every table (pointers, cached summaries, the system database);
* :mod:`.lists`: the overview and the table list (pure);
* :mod:`.pages`: the table page and the groups page;
* :mod:`.actions`: optimize, pause, resume, set a ``self-optimizing.*`` property, each recorded;
* :mod:`.routes`: the HTTP layer; ``static/``: the page, its script and style.
"""

from __future__ import annotations

from mixed_iceberg.service.dashboard.routes import API, PAGE, dashboard_routes

__all__ = ["API", "PAGE", "dashboard_routes"]
