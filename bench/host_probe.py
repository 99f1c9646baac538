"""How fast this host is right now, recorded beside a benchmark's figures (about 2 s).

The project's machine is a VM whose speed changes by the hour, and a compute-bound probe
(SHA-256 of a buffer that stays in cache) does not show it: on 2026-11-30 at 15:00 SHA-256 ran
at its usual ~1.4 GB/s while a plain Kafka consumer read 35k messages/s instead of 130k. What
had changed was the cost of a memory access that misses the caches: a random lookup in a dict
of 1M ints took 3-5 us. The JVM and the Python workers chase pointers through large heaps, so
both figures are recorded.

    .venv/bin/python -m bench.host_probe    # prints both figures; writes no result
"""

from __future__ import annotations

import hashlib
import random

from bench.harness import Clock, Figure, Run, capture_environment, markdown

__all__ = ["host_probe"]


def host_probe(lookups: int = 300_000) -> dict[str, float]:
    """``dict_lookup_ns``: one random lookup in a 1M-entry dict of ints (cache and TLB misses);
    ``sha256_mb_per_s``: SHA-256 of a 1 MiB buffer (compute only)."""
    rng = random.Random(1)
    table = {i: i for i in range(1 << 20)}
    keys = [rng.randrange(1 << 20) for _ in range(lookups)]
    clock = Clock.start()
    total = 0
    for key in keys:
        total += table[key]
    lookup_s = clock.elapsed().wall_s
    buffer = b"x" * (1 << 20)
    clock = Clock.start()
    for _ in range(100):
        hashlib.sha256(buffer).digest()
    hash_s = clock.elapsed().wall_s
    return {"dict_lookup_ns": 1e9 * lookup_s / lookups, "sha256_mb_per_s": 100 / hash_s}


if __name__ == "__main__":
    environment = capture_environment()
    probe = host_probe()
    figures = [
        Figure("random lookup, 1M-entry dict", probe["dict_lookup_ns"], "ns"),
        Figure("SHA-256", probe["sha256_mb_per_s"], "MB/s"),
    ]
    print(markdown(Run("host_probe", environment.finished(), figures)), end="")
