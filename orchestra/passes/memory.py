"""Transient memory policy and the memory report written next to each build."""

from __future__ import annotations

from collections import defaultdict
from typing import Any


def apply_memory_policy(sdfg: Any, pool: bool) -> None:
    """Top-level transients of static size become persistent; other device transients are pooled.

    Persistent transients are allocated once when the library is initialized
    instead of on every call. A transient that stays per-call (its size depends
    on a symbol, or it belongs to a nested SDFG) is, with ``pool`` and in GPU
    global memory, taken from CUDA's stream-ordered pool (``cudaMallocAsync``/
    ``cudaFreeAsync``, no device synchronisation) instead of ``cudaMalloc``/
    ``cudaFree`` on every call.

    Persistent arrays are never marked pooled: DaCe 2.0.0a10 (found there;
    kept for 2.0.0b1, not re-checked without a GPU) then also frees
    them with ``cudaFreeAsync`` inside the program body, after their last use
    (its pool-release analysis covers persistent lifetimes), so a second call
    would use freed memory. ``tests/gpu/test_gpu_passes.py`` checks this.
    """
    from dace import dtypes
    from dace.data import Array, Reference, View

    per_call = (dtypes.AllocationLifetime.Scope, dtypes.AllocationLifetime.SDFG)
    for name, desc in sdfg.arrays.items():
        if not desc.transient or not isinstance(desc, Array) or isinstance(desc, (View, Reference)):
            continue  # a view or reference owns no memory (DaCe refuses them any lifetime but Scope)
        if desc.lifetime in per_call and not desc.free_symbols:
            desc.lifetime = dtypes.AllocationLifetime.Persistent
            desc.pool = False
    if not pool:
        return
    for nested in sdfg.all_sdfgs_recursive():
        for desc in nested.arrays.values():
            if (
                desc.transient
                and isinstance(desc, Array)
                and not isinstance(desc, (View, Reference))
                and desc.storage == dtypes.StorageType.GPU_Global
                and desc.lifetime in per_call
            ):
                desc.pool = True


def memory_report(sdfg: Any) -> dict:
    """Bytes per storage type: ``argument`` (the caller's arrays), ``transient`` (the program's own),
    of those ``top_level_transient`` and ``pooled``.

    A nested SDFG's non-transient arrays are its caller's memory seen again
    (a stencil's fields, a component's arguments): only the top level's
    arguments are counted, once. (Counted at every depth before, the acoustic
    step of FV3 reported 158.75 MiB of arguments for a 12x12x5 domain.)
    """
    totals: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for nested in sdfg.all_sdfgs_recursive():
        top_level = nested is sdfg
        for name, desc in nested.arrays.items():
            if not (desc.transient or top_level):
                continue
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


_WORDS = {
    "argument": "arguments",
    "transient": "temporaries",
    "top_level_transient": "of which allocated once at load",
    "pooled": "of which pooled",
}


def format_memory_report(report: dict) -> str:
    """``Default: arguments 1.20 MiB, temporaries 3.40 MiB, of which allocated once at load 3.00 MiB``."""
    lines = []
    for storage, values in report.items():
        parts = ", ".join(
            f"{_WORDS.get(kind, kind)} {values[kind] / 2**20:.2f} MiB" for kind in _WORDS if kind in values
        )
        lines.append(f"{storage}: {parts}")
    return "; ".join(lines) or "no data"
