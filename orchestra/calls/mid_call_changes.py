"""Values a callback changed while the compiled program ran: said, never used stale in silence.

A compiled program reads the model's scalars (``self.dt``, flags) as the
constants it was built with, and the arrays it reaches through ``self`` as
they were at the start of the call. ``Python`` mode reads both live. A
``dace_inhibitor`` callback that assigns ``self.dt``, toggles a flag or
replaces ``self.tmp`` therefore changes what the rest of a ``Python``-mode
call computes, and nothing of the compiled call: if code after the callback
reads the value, the results differ, silently. (The next call sees the new
value and obtains the program for it; that part was always right.)

Whether code after the callback reads the value is not known from outside
the program, and a value read only before it (a flag a callback clears at
the end of the first step) is harmless. So after each call of a program
with callbacks, :func:`report_mid_call_changes` compares the folded values,
and :data:`ARRAYS_PER_CALL` of the arrays read through ``self`` (the next
ones in turn, so an array a callback replaces on every call is found within
a few calls), with what the call started with; a difference is reported
once per program and value: a warning on rank 0 naming the value and the
fix, the same line at info level on other ranks. Cost, paid only by programs
with callbacks: the dycore's 31 folded values and 16 of its 57 arrays, 8 to
13 us per call (``scripts/time_folded_values.py``, one rank, 24x24x8: about
1 % of its 0.8-1.0 ms step); reading all 57 arrays each time took 28 us.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:
    from orchestra.calls.fast_path import FastCaller
    from orchestra.key.folded_values import FoldedValues

log = logging.getLogger("orchestra")

_REPORTED: set[tuple[str, str]] = set()

#: arrays read through ``self`` compared after each call, the next ones in turn (all of them every few calls)
ARRAYS_PER_CALL = 16


def report_mid_call_changes(label: str, rank: int, values: Optional["FoldedValues"], caller: "FastCaller") -> None:
    """Report a folded value or an array read through ``self`` that changed during the call just made."""
    changed = values.changed() if values is not None else None
    replaced = caller.closure_replaced(ARRAYS_PER_CALL) if changed is None else None
    if changed is None and replaced is None:
        return
    if changed is not None:
        what = changed.split(" was ", 1)[0].split(" can no longer", 1)[0]  # the value's name
        message = (
            f"{label}: {changed}: it changed while the compiled program ran (a callback set it); the program "
            "used the value it was built with for the whole call, so where code after the callback reads it, "
            "the results differ from Python mode. Return such a value from the callback instead "
            "(dt: float = self.compute_dt()), or keep it in an array"
        )
    else:
        what = replaced
        message = (
            f"{label}: {replaced} was replaced while the compiled program ran (a callback assigned it); the "
            "program used the array it had at the start of the call for the whole call, so where code after "
            "the callback reads it, the results differ from Python mode. Write into the array instead of "
            "replacing it (self.tmp[:] = ...)"
        )
    if (label, what) in _REPORTED:
        return
    _REPORTED.add((label, what))
    (log.warning if rank == 0 else log.info)("%s", message)
