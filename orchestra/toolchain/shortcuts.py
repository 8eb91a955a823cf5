"""DaCe's own answers with less work: the shortcuts orchestra installs while DaCe or gt4py builds.

:func:`exact_shortcuts` combines, for the duration of a ``with`` block,
:func:`orchestra.toolchain.line_info.cheap_line_info` (a new node's source
line read from one frame, not the whole stack) and
:func:`orchestra.toolchain.trivial_conditions.one_evaluation_per_condition`
(each branch condition evaluated once for both truth values). Each gives the
answer of the DaCe function it stands for, so the SDFGs made inside are the
ones DaCe makes alone; each is installed only over the DaCe version it was
written for.
"""

from __future__ import annotations

import contextlib
from typing import Iterator

from orchestra.toolchain.line_info import cheap_line_info
from orchestra.toolchain.trivial_conditions import one_evaluation_per_condition


@contextlib.contextmanager
def exact_shortcuts() -> Iterator[None]:
    """Inside the block, DaCe (and gt4py's lowering through it) skips work that does not change its answers."""
    with cheap_line_info(), one_evaluation_per_condition():
        yield
