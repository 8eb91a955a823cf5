"""Debug checks injected after every kernel of a build (``ORCHESTRA_DEBUG``).

Reads: the optimized SDFG (after simplification, the GPU pass and the memory
policy: it must see the final kernels). Changes: adds one check state after
each kernel (and, on GPU, a device synchronisation and host mirrors of the
checked fields); never touches the kernels themselves. With no check selected
the SDFG is not touched at all.

Modules, in the order a build uses them:

- :mod:`.selection`: :class:`DebugChecks`, the parsed ``ORCHESTRA_DEBUG``
  selection (part of the cache key);
- :mod:`.kernels`: finds the kernels and the fields each writes;
- :mod:`.codegen`: the C++ of the check tasklets and their runtime;
- :mod:`.insert`: the pass, :func:`insert_debug_checks`.

User guide: ``docs/debugging.md``.
"""

from __future__ import annotations

from typing import Any, Optional

from orchestra.passes.debug.selection import DEBUG_EXIT_CODE, DEBUG_VARIABLE, DebugChecks


def insert_debug_checks(sdfg: Any, checks: DebugChecks, paths: Optional[dict[str, str]] = None) -> Optional[list]:
    """Insert the selected checks after every kernel of ``sdfg`` (see :mod:`.insert`).

    Imported on use: selecting checks (``DebugChecks``) must not import DaCe.
    """
    from orchestra.passes.debug.insert import insert_debug_checks as insert

    return insert(sdfg, checks, paths)


__all__ = ["DEBUG_EXIT_CODE", "DEBUG_VARIABLE", "DebugChecks", "insert_debug_checks"]
