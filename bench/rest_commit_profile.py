"""Where one keyed-table commit through ``mixed-iceberg serve`` spends its time, client side.

```
.venv/bin/python -m bench.rest_commit_profile [--commits 100]
```

Starts a serve process over a fresh SQLite catalog (tests/support/rest_server.py), creates a
keyed table through ``load_catalog(type="rest")``, makes warm-up commits, then profiles
``--commits`` one-row commits with cProfile and prints the p50 commit time and the top of the
profile by cumulative time. A diagnostic for ``bench.rest_commits``' latency figure, not a figure
of its own.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import tempfile
import time
from pathlib import Path

import pyarrow as pa

from mixed_iceberg import load_catalog
from tests.support.rest_server import RestServer


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commits", type=int, default=100)
    parser.add_argument("--top", type=int, default=35)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="rest-commit-profile-") as home:
        server = RestServer.start(Path(home))
        try:
            catalog = load_catalog("rest", type="rest", uri=server.uri, warehouse=server.warehouse)
            catalog.create_namespace("db")
            schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.string())])
            table = catalog.create_table("db.t", schema, primary_key=["id"])

            def commit(n: int) -> None:
                with table.new_transaction(("c", n)) as txn:
                    txn.write(pa.table({"id": pa.array([n], pa.int64()), "v": ["x"], "_change_action": ["+I"]}))

            for n in range(20):
                commit(n)
            seconds = []
            profile = cProfile.Profile()
            profile.enable()
            for n in range(20, 20 + args.commits):
                started = time.perf_counter()
                commit(n)
                seconds.append(time.perf_counter() - started)
            profile.disable()
        finally:
            server.stop()
    seconds.sort()
    print(f"p50 commit (profiled): {seconds[len(seconds) // 2] * 1000:.1f} ms over {args.commits} commits")
    print(f"loads answered 304 Not Modified: {getattr(catalog.iceberg, 'not_modified', 'n/a')}")
    print(f"refreshes skipped (the writer's own head): {getattr(catalog.iceberg, 'refreshes_skipped', 'n/a')}")
    pstats.Stats(profile).sort_stats("cumulative").print_stats(args.top)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
