"""The one cache implementation: least recently used dropped first, counted, safe across threads."""

from __future__ import annotations

import threading

import pytest

from mixed_iceberg.caching import IdentityCache, LruCache


def test_the_least_recently_used_entry_goes_first_and_lookups_are_counted() -> None:
    cache: LruCache[str, int] = LruCache(2)
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.get("a") == 1  # a is now the newest
    cache.put("c", 3)
    assert (cache.get("b"), cache.get("a"), cache.get("c")) == (None, 1, 3)
    assert (cache.hits, cache.misses, len(cache)) == (3, 1, 2)
    assert cache.peek("zz") is None
    assert cache.misses == 1  # peek counts nothing


def test_get_or_build_builds_once_per_key() -> None:
    cache: LruCache[int, str] = LruCache(8)
    built: list[int] = []

    def build(key: int) -> str:
        built.append(key)
        return str(key)

    assert [cache.get_or_build(k, lambda k=k: build(k)) for k in (1, 2, 1, 1, 2)] == ["1", "2", "1", "1", "2"]
    assert built == [1, 2]


def test_an_identity_cache_never_answers_for_another_object_with_a_reused_id() -> None:
    cache: IdentityCache[str] = IdentityCache(4)
    first = [1]
    assert cache.get_or_build((first,), lambda: "first") == "first"
    assert cache.get_or_build((first,), lambda: "again") == "first"
    # An equal but distinct object is a different key, even if it took the same id.
    assert cache.get_or_build(([1],), lambda: "other") == "other"


def test_concurrent_use_keeps_the_bound() -> None:
    cache: LruCache[int, int] = LruCache(64)

    def work(offset: int) -> None:
        for i in range(5_000):
            cache.get_or_build((i * 7 + offset) % 500, lambda i=i: i)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(cache) == 64


def test_a_cache_needs_room_for_one_entry() -> None:
    with pytest.raises(ValueError, match="capacity >= 1"):
        LruCache(0)
