"""DaCe's program object, named validly whatever the model's module is called.

DaCe names a program ``<module>_<Class>_<method>`` with the module's dots
replaced; a model run by ``runpy.run_path`` lives in a module called
``<run_path>``, and one loaded from a file by path may have a dash in its
module name: both made an SDFG name DaCe refuses ("Invalid SDFG name"). Every
other character than a letter, digit or ``_`` becomes ``_``; names that were
valid are unchanged (so are their cache keys).
"""

from __future__ import annotations

import functools
import re
from typing import Any


@functools.cache
def named_program_class() -> type:
    """``DaceProgram`` with a valid :attr:`name` (created on first use: DaCe is imported lazily)."""
    from dace.frontend.python.parser import DaceProgram

    class NamedProgram(DaceProgram):
        @property
        def name(self) -> str:
            return re.sub(r"\W", "_", super().name)

    return NamedProgram


def dace_program(function: Any, device: Any, method: bool) -> Any:
    """A DaCe program of ``function`` (see the module)."""
    return named_program_class()(function, (), {}, False, device, method=method)
