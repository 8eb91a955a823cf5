"""Variants timed in one process, batches interleaved (A B ... then ... B A), the ratio of medians.

On a shared machine the load drifts between separate jobs; variants timed
side by side in one process see the same load, so their ratio is the
before/after figure (``scripts/compare_passes.py``, ``scripts/bench_ndsl_style.py``).
"""

from __future__ import annotations

from typing import Callable, Mapping

import numpy as np


def interleaved_medians(
    batch: Mapping[str, Callable[[int], float]], batches: int, seconds_per_batch: float = 0.2
) -> tuple[dict[str, float], int]:
    """Median seconds per step of each variant, and the steps per batch.

    ``batch[name](steps)`` runs ``steps`` steps of a variant (from the same
    initial state every time) and returns the seconds per step. Each variant
    first runs 2 steps untimed (its first call: load, marshal); the batch
    length is set from one step of the first variant.
    """
    names = list(batch)
    for name in names:
        batch[name](2)
    steps = max(1, int(seconds_per_batch / max(batch[names[0]](1), 1e-6)))
    samples: dict[str, list[float]] = {name: [] for name in names}
    for index in range(batches):
        for name in names if index % 2 == 0 else names[::-1]:
            samples[name].append(batch[name](steps))
    return {name: float(np.median(values)) for name, values in samples.items()}, steps
