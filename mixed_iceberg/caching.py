"""The process-wide caches: bounded, least recently used, thread-safe, with hit counts.

Everything cached is immutable (a metadata file by its location, a manifest list by its path,
Avro readers by schema, the JSON of frozen models): a cache only saves work, never changes an
answer. :class:`LruCache` is ``cachetools.LRUCache`` behind a lock (cachetools' caches are not
thread-safe; ingest commits from several threads). :class:`IdentityCache` keys values derived
from objects by the objects' identity and holds the objects, so an id is never reused while
its entry lives.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from cachetools import LRUCache

__all__ = ["IdentityCache", "LruCache"]

K = TypeVar("K")
V = TypeVar("V")


class LruCache(Generic[K, V]):
    """At most ``capacity`` entries, the least recently used dropped first; with ``sizeof``,
    entries of at most ``capacity`` in total size (a value larger than that is not kept).

    ``hits`` and ``misses`` count :meth:`get` and :meth:`get_or_build` lookups (tests and the
    commit profile read them). A build runs outside the lock: two threads missing the same key
    at once both build it, and the last one is kept.
    """

    def __init__(self, capacity: int, *, sizeof: Callable[[V], int] | None = None) -> None:
        if capacity < 1:
            raise ValueError(f"expected a cache capacity >= 1, found {capacity}")
        self._entries: LRUCache[K, V] = LRUCache(maxsize=capacity, getsizeof=sizeof)
        self._sizeof = sizeof
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, key: K) -> V | None:
        """The value kept for ``key`` (it becomes the most recently used), or None."""
        with self._lock:
            found = self._entries.get(key)
            if found is None:
                self.misses += 1
            else:
                self.hits += 1
            return found

    def peek(self, key: K) -> V | None:
        """The value kept for ``key``, or None; counts neither a hit nor a miss."""
        with self._lock:
            return self._entries.get(key)

    def put(self, key: K, value: V) -> None:
        if self._sizeof is not None and self._sizeof(value) > self._entries.maxsize:
            return
        with self._lock:
            self._entries[key] = value

    def discard(self, key: K) -> None:
        """Forget ``key`` (nothing happens when it is not kept)."""
        with self._lock:
            self._entries.pop(key, None)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    @property
    def size(self) -> int:
        """Entries kept, or their total size with ``sizeof``."""
        return int(self._entries.currsize)

    def get_or_build(self, key: K, build: Callable[[], V]) -> V:
        found = self.get(key)
        if found is not None:
            return found
        value = build()
        self.put(key, value)
        return value

    def __len__(self) -> int:
        return len(self._entries)


class IdentityCache(Generic[V]):
    """Values derived from objects, by the objects' identity (for frozen objects whose equality
    would cost more than the value saves, such as pydantic models)."""

    def __init__(self, capacity: int) -> None:
        self._entries: LruCache[tuple[int, ...], tuple[tuple[Any, ...], V]] = LruCache(capacity)

    @property
    def hits(self) -> int:
        return self._entries.hits

    @property
    def misses(self) -> int:
        return self._entries.misses

    def get_or_build(self, objects: tuple[Any, ...], build: Callable[[], V]) -> V:
        key = tuple(id(o) for o in objects)
        found = self._entries.get(key)
        if found is not None and all(a is b for a, b in zip(found[0], objects, strict=True)):
            return found[1]
        value = build()
        self._entries.put(key, (objects, value))
        return value

    def __len__(self) -> int:
        return len(self._entries)
