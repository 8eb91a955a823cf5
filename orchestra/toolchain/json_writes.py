"""DaCe's JSON files written through Python's C encoder.

``SDFG.save`` writes an SDFG's JSON with ``dace.serialize.dump``, that is
``json.dump``: Python encodes a stream of chunks for a file with its
pure-Python encoder, and keeps the C encoder for ``json.dumps``. gt4py saves
every stencil's SDFG twice so (the SDFG it lowers, the one frozen for an
origin and domain): on the 196 MB program saved once, ``json.dump`` took
38.4 s and ``json.dumps`` 7.7 s for the same text (docs/performance.md).

:func:`c_encoded_json_writes` installs, for the duration of a ``with``
block, a ``dace.serialize.dump`` that writes ``dace.serialize.dumps`` of the
same arguments in one piece. The text is the same: both encode with one
``json.JSONEncoder`` of the same settings, the one in C where it applies
(no indentation; a readable file is indented, and Python's own encoder
writes it in both), and a stream's bytes do not depend on how they arrive.
Installed only over the function it was written for.
"""

from __future__ import annotations

from typing import Any, Callable

from orchestra.toolchain.stand_in import WhileAnyInside, replaced_where_recognized, source_digest

#: sha256 of the source of DaCe 2.0.0b1's ``dace.serialize.dump``.
_WRITTEN_FOR = "25c46e8d0ae8ce733671f0d871f4c5ba242102ff78d771f89b6ce3dfae0c47de"


def dump(obj: Any, fp: Any, readable: bool = False, **kwargs: Any) -> None:
    """``dace.serialize.dump``: ``obj`` as DaCe's JSON into the file ``fp``, encoded in one piece."""
    from dace import serialize

    fp.write(serialize.dumps(obj, readable=readable, **kwargs))


def recognizes(function: Any) -> bool:
    """Whether ``function`` is the ``dace.serialize.dump`` :func:`dump` was proven against."""
    return source_digest(function) == _WRITTEN_FOR


def _installed() -> Callable[[], None]:
    from dace import serialize

    return replaced_where_recognized((serialize,), "dump", recognizes, dump)


#: Within the block (and any block of another thread overlapping it), DaCe writes JSON files with
#: :func:`dump` (module docstring).
c_encoded_json_writes = WhileAnyInside(_installed)
