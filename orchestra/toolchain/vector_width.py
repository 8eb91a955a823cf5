"""The vector width CPU builds prefer on x86: ``ORCHESTRA_VECTOR_WIDTH``.

``-mprefer-vector-width`` chooses the widest vectors the compiler's loops
use. It enters a build's flags (and so its key) through
:func:`orchestra.toolchain.host_args`.
"""

from __future__ import annotations

import os
import platform

from orchestra.errors import ConfigurationError

#: Chooses the widest vectors the compiler's loops use on x86 (``-mprefer-vector-width``):
#: ``128``, ``256``, ``512``, or ``compiler`` (its own tuning for ``-march=native``).
VECTOR_WIDTH_VARIABLE = "ORCHESTRA_VECTOR_WIDTH"
#: The compiler's own choice unless ``ORCHESTRA_VECTOR_WIDTH`` says otherwise. GCC 12's
#: tuning prefers 256-bit loops on every AVX-512 CPU it knows (``skylake-avx512``,
#: ``icelake-server``, ``sapphirerapids``, ``znver4``); on a CPU newer than the compiler
#: (an AMD Zen 5 reads as ``znver3`` with AVX-512) ``-march=native`` gives 512-bit loops.
#: There, with full-width AVX-512 units (multiply-add peak 108.7 GF/s per core with
#: 512-bit loops, 54.7 with 256), the dycore's step ran 0.96-1.08x as fast with 256 as
#: with 512: its loops are not limited by their arithmetic, and a loop that is would lose
#: up to half its speed (docs/performance_log.md). The width changes which lanes run together,
#: never an operation: results are bitwise the same at every width.
DEFAULT_VECTOR_WIDTH = "compiler"
_VECTOR_WIDTHS = ("128", "256", "512", "compiler")


def vector_width() -> str:
    """``ORCHESTRA_VECTOR_WIDTH`` (default :data:`DEFAULT_VECTOR_WIDTH`); another value is a :class:`ConfigurationError`."""
    value = os.environ.get(VECTOR_WIDTH_VARIABLE, "").strip().lower() or DEFAULT_VECTOR_WIDTH
    if value not in _VECTOR_WIDTHS:
        raise ConfigurationError(
            f"{VECTOR_WIDTH_VARIABLE}={os.environ[VECTOR_WIDTH_VARIABLE]!r} is not a vector width; "
            f"set it to one of {', '.join(_VECTOR_WIDTHS)} (or unset it for {DEFAULT_VECTOR_WIDTH})"
        )
    return value


def is_x86() -> bool:
    """True on a 64-bit x86 host, where compilers take ``-mprefer-vector-width``."""
    return platform.machine().lower() in ("x86_64", "amd64")


def vector_width_args() -> tuple[str, ...]:
    """The flag for :func:`vector_width` on an x86 host; nothing elsewhere or for ``compiler``."""
    width = vector_width()
    if width == "compiler" or not is_x86():
        return ()
    return (f"-mprefer-vector-width={width}",)
