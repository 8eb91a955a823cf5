"""DaCe's helpers that every stage calls, made cheaper while orchestra builds or lowers.

Entered by :func:`orchestra.toolchain.dace_settings` (every build, every
lowering process and waiting rank): each replaces a DaCe function, or adds a
copier to ``copy``'s table, by one that gives the same answer with less
work, and only over the DaCe it was written for; all are undone on leaving.

* :mod:`.line_info`: a new node's source line from one frame, not the whole stack;
* :mod:`.deduplication`: repeats removed from a list in linear time;
* :mod:`.ast_copies`: syntax trees deep-copied directly;
* :mod:`.element_ids`: element ids from a seeded generator, not a system call each;
* :mod:`.json_writes`: JSON files encoded by Python's C encoder.
"""

from __future__ import annotations

import contextlib
from typing import Iterator


@contextlib.contextmanager
def cheaper_helpers() -> Iterator[None]:
    """Within the block, every replacement of the module docstring that applies to the DaCe found."""
    from orchestra.toolchain.ast_copies import direct_ast_copies
    from orchestra.toolchain.deduplication import linear_deduplication
    from orchestra.toolchain.element_ids import seeded_element_ids
    from orchestra.toolchain.json_writes import c_encoded_json_writes
    from orchestra.toolchain.line_info import cheap_line_info

    with contextlib.ExitStack() as stack:
        for replacement in (cheap_line_info, linear_deduplication, direct_ast_copies, seeded_element_ids,
                            c_encoded_json_writes):
            stack.enter_context(replacement())
        yield
