"""Orchestrated CPU builds under AddressSanitizer: ``ORCHESTRA_SANITIZE=address``.

A program that writes past an array (a nested SDFG read with another
contract's indices, issue 54) may crash at exit, in MPI or not at all. Built
with ``-fsanitize=address`` it stops at the first out-of-bounds access with
the kernel's line. The flags enter the build's flags and so its key
(:func:`orchestra.toolchain.host_args`): a sanitized build never serves an
ordinary run. Python must load the sanitizer's runtime first:
``scripts/memcheck.sh`` sets ``LD_PRELOAD`` and ``ASAN_OPTIONS`` and runs a
model or the tests that way.
"""

from __future__ import annotations

import os

from orchestra.errors import ConfigurationError

SANITIZE_VARIABLE = "ORCHESTRA_SANITIZE"
_FLAGS = {
    "address": ("-fsanitize=address", "-fno-omit-frame-pointer", "-g"),
}


def sanitize_args() -> tuple[str, ...]:
    """The compiler flags ``ORCHESTRA_SANITIZE`` asks for (none when unset)."""
    value = os.environ.get(SANITIZE_VARIABLE, "").strip().lower()
    if value in ("", "0", "off", "none"):
        return ()
    if value not in _FLAGS:
        raise ConfigurationError(
            f"{SANITIZE_VARIABLE}={value!r} is not a sanitizer orchestra builds with; use one of "
            f"{', '.join(sorted(_FLAGS))} (with scripts/memcheck.sh), or unset it"
        )
    return _FLAGS[value]
