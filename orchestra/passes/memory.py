"""Transient memory policy and the memory report written next to each build."""

from __future__ import annotations

from collections import defaultdict
from typing import Any


def apply_memory_policy(sdfg: Any, pool: bool) -> None:
    """Move top-level transients to persistent lifetime; pool them when asked.

    Persistent transients are allocated once when the library is initialized
    instead of on every call. On GPU, ``pool`` makes DaCe allocate them from a
    stream-ordered memory pool.
    """
    from dace import dtypes
    from dace.data import Array

    for name, desc in sdfg.arrays.items():
        if not desc.transient or not isinstance(desc, Array):
            continue
        if desc.lifetime == dtypes.AllocationLifetime.Scope and not desc.free_symbols:
            desc.lifetime = dtypes.AllocationLifetime.Persistent
        if pool:
            desc.pool = True


def memory_report(sdfg: Any) -> dict:
    """Bytes per storage type, split into transient/argument, pooled and top-level."""
    totals: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for nested in sdfg.all_sdfgs_recursive():
        top_level = nested is sdfg
        for name, desc in nested.arrays.items():
            try:
                nbytes = int(desc.total_size) * int(desc.dtype.bytes)
            except (TypeError, ValueError):
                continue  # symbolic size
            storage = str(desc.storage).split(".")[-1]
            bucket = totals[storage]
            bucket["transient" if desc.transient else "argument"] += nbytes
            if getattr(desc, "pool", False):
                bucket["pooled"] += nbytes
            if top_level and desc.transient:
                bucket["top_level_transient"] += nbytes
    return {storage: dict(values) for storage, values in sorted(totals.items())}


def format_memory_report(report: dict) -> str:
    lines = []
    for storage, values in report.items():
        parts = ", ".join(f"{kind} {value / 2**20:.2f} MiB" for kind, value in sorted(values.items()))
        lines.append(f"{storage}: {parts}")
    return "; ".join(lines) or "no data"
