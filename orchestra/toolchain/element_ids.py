"""DaCe's element ids drawn from a seeded generator instead of the operating system.

Every SDFG, state, node and memlet DaCe makes or copies gets a ``guid``:
``str(uuid.uuid4())``, 16 bytes from ``os.urandom`` (a system call) put into
a ``uuid.UUID`` and formatted, about 2 us each. The ids only tell elements
apart (DaCe keys maps and diffs by them); a build makes hundreds of
thousands (every memlet the region split copies gets one), 1.9% of the
dycore's build and 7% of its optimize stage (profiled).

:func:`seeded_element_ids` installs, for the duration of a ``with`` block, a
function returning the same kind of string (a version-4 UUID's 36
characters) from 128 bits of a ``random.Random`` seeded from ``os.urandom``
once per process, and again in a forked child (so parent and child never
share a sequence): 0.5 us each, as unlikely to repeat as ``uuid4``. It stands
in as ``dace.sdfg.graph.generate_element_id`` and in the modules that
imported that name, only over the function it was written for.
"""

from __future__ import annotations

import os
import random
from typing import Any, Callable

from orchestra.toolchain.stand_in import WhileAnyInside, replaced_where_recognized, source_digest

#: sha256 of the source of DaCe 2.0.0b1's ``dace.sdfg.graph.generate_element_id``.
_WRITTEN_FOR = "6dc0958eafaa448902ce448de74d74f3221ce4f588cc1e9e3a5f9473668ea3ce"

_random = random.Random(os.urandom(32))
os.register_at_fork(after_in_child=lambda: _random.seed(os.urandom(32)))

#: The bits a version-4 UUID fixes: the version nibble and the variant's two bits.
_CLEARED = ~((0xF000 << 64) | (0xC000 << 48))
_SET = (0x4000 << 64) | (0x8000 << 48)


def element_id(element: Any = None) -> str:
    """A new id for ``element``: a random version-4 UUID as text, like ``str(uuid.uuid4())``."""
    digits = "%032x" % (_random.getrandbits(128) & _CLEARED | _SET)
    return f"{digits[:8]}-{digits[8:12]}-{digits[12:16]}-{digits[16:20]}-{digits[20:]}"


def recognizes(function: Any) -> bool:
    """Whether ``function`` is the ``generate_element_id`` :func:`element_id` stands in for."""
    return source_digest(function) == _WRITTEN_FOR


def _installed() -> Callable[[], None]:
    from dace import memlet
    from dace.sdfg import graph, sdfg, state

    return replaced_where_recognized((graph, sdfg, state, memlet), "generate_element_id", recognizes, element_id)


#: Within the block (and any block of another thread overlapping it), DaCe's element ids are
#: :func:`element_id`'s (module docstring).
seeded_element_ids = WhileAnyInside(_installed)
