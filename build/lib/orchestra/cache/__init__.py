"""The build cache: content keys, manifests, and a crash-safe store of builds.

* :mod:`~orchestra.cache.fingerprint`: the canonical form of build inputs and
  their key (``fingerprint(inputs)``);
* :mod:`~orchestra.cache.manifest`: what a build was made from
  (``Manifest``), and how two sets of inputs differ (``describe_differences``);
* :mod:`~orchestra.cache.store`: builds on disk (``BuildStore``): atomic
  publish, verified lookup, per-key locks, listing and cleaning; helped by
  :mod:`~orchestra.cache.layout` (names on disk), :mod:`~orchestra.cache.entry`
  (is a folder a usable build?), :mod:`~orchestra.cache.locking` (``flock``),
  :mod:`~orchestra.cache.durable` (atomic, flushed file operations) and
  :mod:`~orchestra.cache.requests` (what runs asked for);
* :mod:`~orchestra.cache.versions`: toolchain versions, read without imports;
* :mod:`~orchestra.cache.errors`: ``CacheError`` and its subclasses.

This package imports neither DaCe nor gt4py: it is plain Python, stdlib and
numpy, fast to import and testable alone. ``docs/cache.md`` describes the
layout on disk and how to read ``orchestra cache explain``.
"""

from orchestra.cache.errors import CacheError, CacheLockTimeout, CacheMiss, CorruptEntry
from orchestra.cache.fingerprint import CACHE_FORMAT_VERSION, KEY_METADATA, canonical, fingerprint
from orchestra.cache.manifest import Manifest, describe_differences
from orchestra.cache.entry import BuildEntry, LookupResult
from orchestra.cache.layout import default_cache_root
from orchestra.cache.requests import Request
from orchestra.cache.store import BuildStore, IncompleteFolder, Removal

__all__ = [
    "CACHE_FORMAT_VERSION",
    "KEY_METADATA",
    "BuildEntry",
    "BuildStore",
    "CacheError",
    "CacheLockTimeout",
    "CacheMiss",
    "CorruptEntry",
    "IncompleteFolder",
    "LookupResult",
    "Manifest",
    "Removal",
    "Request",
    "canonical",
    "default_cache_root",
    "describe_differences",
    "fingerprint",
]
