"""Ranks waiting for a build lower its stencils meanwhile, so the builder finds them done.

A cold build's largest part on a fresh checkout is gt4py lowering each
stencil into its SDFG (schedule tree, DaCe's simplify, freezing the origin
and domain, plus gt4py's IR), one stencil after another on the building
rank while every other rank of the job waits. The stencils are independent,
and every rank already holds the objects of its own call tree (the key was
computed from them). So each waiting rank with the builder's key takes a
share of the build's stencils, grouped by gt4py's content id (one group's
origins and domains share its IR and unfrozen SDFG), round robin in the
order the program calls them, and lowers them into gt4py's cache
(:meth:`orchestra.stencils.frozen.FrozenStencil.lower_ahead`), then restates them for
their calls (``restate_ahead``, :mod:`orchestra.stencils.restated`). The builder parses as
before; a stencil lowered ahead is read from the cache, one being lowered
holds its lock until done, one not yet started is lowered by the builder.
Nothing is exchanged between ranks: the shares follow from the key table
every rank holds.

A waiting rank starts only after :data:`START_AFTER_S` (a build that is
found in the cache ends sooner, so a warm start lowers nothing), checks
between stencils whether the builds ended, and stops then. A stencil that
fails to lower is left to the builder, whose parse reports the error. What
DaCe and gt4py warn while a waiting rank lowers (dozens of lines about
connectors per stencil) is logged at debug level, not printed: the builder
keeps its own warnings in the build's ``build_warnings.log``, and a stencil
lowered ahead would otherwise print them once per waiting rank.
``DaceConfig.lowering_helpers`` (``ORCHESTRA_LOWERING_HELPERS``) caps how many
waiting ranks per key help (0: none); by default every waiting rank may.
"""

from __future__ import annotations

import collections
import logging
import time
import warnings
from typing import Any, Callable, Optional

from orchestra.distributed.key_agreement import KeyTable
from orchestra.pipeline.garbage_collection import fewer_collections

log = logging.getLogger("orchestra")

#: Seconds a rank waits for the builds before it starts lowering stencils.
START_AFTER_S = 1.0


def stencil_groups(callees: tuple) -> list[list[Any]]:
    """The callees that can lower ahead, grouped by gt4py's content id, in the order they were met."""
    groups: dict[str, list[Any]] = {}
    for callee in callees:
        if not callable(getattr(callee, "lower_ahead", None)):
            continue
        identity = callee.build_identity()
        groups.setdefault(f"{identity.get('gt_id')}:{identity.get('backend')}", []).append(callee)
    return list(groups.values())


def helper_share(table: KeyTable, rank: int, groups: int, limit: Optional[int]) -> list[int]:
    """The groups ``rank`` lowers: every ``helpers``-th from its index among its key's waiting ranks.

    The helpers of a key are its lowest waiting ranks, at most ``groups`` and
    ``limit`` (None: no cap) of them; the walk over ranks stops there.
    """
    key = table.key_of(rank)
    if table.builders[key] == rank or groups == 0 or limit == 0:
        return []
    cap = groups if limit is None else min(groups, limit)
    helpers: list[int] = []
    for other in range(table.size):
        if len(helpers) == cap:
            break
        if table.key_of(other) == key and table.builders[key] != other:
            helpers.append(other)
    if rank not in helpers:
        return []
    return list(range(helpers.index(rank), groups, len(helpers)))


def lowering_work(callees: tuple, table: KeyTable, rank: int, limit: Optional[int]) -> list[Callable[[], None]]:
    """This rank's stencils to lower while it waits, one callable per stencil: each lowered, then each
    restated for the call (:meth:`~orchestra.stencils.frozen.FrozenStencil.restate_ahead`)."""
    groups = stencil_groups(callees)
    share = helper_share(table, rank, len(groups), limit)
    stencils = [stencil for index in share for stencil in groups[index]]
    return [_lowering(stencil, rank, step) for step in ("lower_ahead", "restate_ahead") for stencil in stencils
            if callable(getattr(stencil, step, None))]


_DOING = {"lower_ahead": "lowering", "restate_ahead": "restating"}
_DONE = {"lower_ahead": "lowered", "restate_ahead": "restated"}


def _lowering(stencil: Any, rank: int, step: str) -> Callable[[], None]:
    def lower() -> None:
        start = time.perf_counter()
        try:
            with warnings.catch_warnings(record=True) as caught, fewer_collections():
                warnings.simplefilter("always")
                done = getattr(stencil, step)()
            _log_warnings(caught, stencil, rank)
        except Exception as error:  # the builder lowers it and reports what is wrong
            log.debug(
                "[rank %d] %s %r ahead failed (%s: %s); the builder does it",
                rank, _DOING[step], stencil, type(error).__name__, error,
            )
            return
        if done:
            log.debug("[rank %d] %s %r ahead of the build in %.1f s", rank, _DONE[step], stencil,
                      time.perf_counter() - start)

    return lower


def _log_warnings(caught: list, stencil: Any, rank: int) -> None:
    """What lowering ``stencil`` warned, at debug level (distinct messages, with their counts)."""
    if not caught:
        return
    counts = collections.Counter(f"{warning.category.__name__}: {warning.message}" for warning in caught)
    listed = "; ".join(text if count == 1 else f"{text} (x{count})" for text, count in counts.items())
    log.debug("[rank %d] lowering %r ahead warned: %s", rank, stencil, listed)
