"""How many files a build's generated C++ is split into, and how many compiler processes run at once.

``ORCHESTRA_COMPILE_UNITS`` bounds the number of files: ``1`` (or ``0``) one
file; a number, at most that many; unset, one per core this process may use
and compile job (:func:`compile_jobs`: DaCe's ``compiler.build_jobs``, 4, or
this rank's share of its node's cores where that is more) and one per
:data:`LINES_PER_UNIT` lines; where compiled objects are kept between builds
(:mod:`orchestra.toolchain.object_cache`), up to :data:`REUSED_UNITS` files on
any number of cores, so that an edit's rebuild compiles a few of them.
"""

from __future__ import annotations

import os
from typing import Optional

#: Below this many lines of code to compile per file, a program is not split further (unless asked for).
LINES_PER_UNIT = 10000
UNITS_VARIABLE = "ORCHESTRA_COMPILE_UNITS"
#: The most files a program is split into for reusing objects alone, whatever the cores.
REUSED_UNITS = 8


def requested_units() -> Optional[int]:
    """``ORCHESTRA_COMPILE_UNITS`` as a number (None when unset: decided by size and cores)."""
    value = os.environ.get(UNITS_VARIABLE, "").strip()
    if not value:
        return None
    try:
        return max(1, int(value))
    except ValueError:
        from orchestra.errors import ConfigurationError

        raise ConfigurationError(f"{UNITS_VARIABLE}={value!r} is not a number; give the most files the generated "
                                 "C++ may be split into (1: one file), or unset it") from None


def default_units(lines: int) -> int:
    """Files for ``lines`` of code when not asked: one per usable core and compile job, one per LINES_PER_UNIT.

    Where objects are kept between builds (:mod:`orchestra.toolchain.object_cache`), up to
    :data:`REUSED_UNITS` files even on fewer cores: an edit then recompiles a few of them.
    """
    from orchestra.distributed.helper_processes import usable_cores
    from orchestra.toolchain.object_cache import reusing

    by_size = lines // LINES_PER_UNIT
    return max(1, min(usable_cores(), compile_jobs(), by_size), min(REUSED_UNITS, by_size) if reusing() else 1)


def compile_jobs() -> int:
    """Compiler processes a build runs at once: :func:`jobs_for` this process's cores and its node's ranks."""
    import dace

    from orchestra.distributed.helper_processes import ranks_on_node_from_launcher, usable_cores

    return jobs_for(int(dace.Config.get("compiler", "build_jobs")), usable_cores(), ranks_on_node_from_launcher())


def jobs_for(configured: int, cores: int, ranks_on_node: int) -> int:
    """DaCe's ``compiler.build_jobs``, or this rank's share of its node's cores where that is more.

    The other ranks of a job wait while one builds, so their cores are the builder's to use.

    >>> jobs_for(4, cores=2, ranks_on_node=1)
    4
    >>> jobs_for(4, cores=16, ranks_on_node=1)
    16
    >>> jobs_for(4, cores=16, ranks_on_node=6)
    4
    """
    return max(1, configured, cores // max(1, ranks_on_node))
