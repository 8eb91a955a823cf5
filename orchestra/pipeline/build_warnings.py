"""What DaCe and gt4py warned while a program was built: counted by kind, explained where known.

A big program's build raises thousands of warnings (the acoustic step of FV3:
4,121), almost all of a few kinds, each repeated once per stencil or nested
call. The console gets one line naming the kinds and their counts
(:func:`summary_line`); the build's ``build_warnings.log`` starts with the same
table, then lists every warning with where it was raised.

A kind is the warning's category, the place in DaCe or gt4py that raised it,
and its message with the names in it (quoted names, bracketed lists, numbers)
blanked out: ``Nested SDFG "…" was not inlined because its connectors […] ...``.
Kinds orchestra knows the cause of carry a short note (:data:`KNOWN_KINDS`).
"""

from __future__ import annotations

import collections
import dataclasses
import re
import warnings
from pathlib import Path
from typing import Sequence

#: The build's warnings, next to its library.
WARNINGS_FILE = "build_warnings.log"

#: message start -> (a few words for the console, what it means for an orchestra build); checked
#: against DaCe 2.0.0b1 and gt4py 1.1.12
KNOWN_KINDS = {
    "Nested SDFG": (
        "gt4py freezing stencils; harmless",
        "gt4py's freezing of each stencil (dace_backend.freeze_origin_domain_sdfg) tries to inline its "
        "computation and cannot under DaCe 2 (a windowed nested SDFG); orchestra restates every such "
        "nested SDFG right after the parse (pipeline/nested_contract.py), so nothing is computed from a window",
    ),
    "Loop at": (
        "Python loops unrolled",
        "DaCe unrolls a Python loop over a compile-time range (dace_nounroll(range(n)) keeps it a loop)",
    ),
    "No `gpu_block_size`": (
        "default GPU block size",
        "DaCe uses compiler.cuda.default_block_size for a GPU map without a block size",
    ),
}

_NAMES = re.compile(r'"[^"]*"|\'[^\']*\'|\[[^\]]*\]|\{[^}]*\}|\([^)]*\)|\b\d+\b')


@dataclasses.dataclass(frozen=True)
class WarningKind:
    """One kind of warning and how often the build raised it."""

    count: int
    category: str
    template: str  #: the message with its names blanked out
    origin: str  #: the raising file within its package, e.g. ``dace/frontend/python/newast.py``

    @property
    def notes(self) -> tuple[str, str]:
        """(a few words, what it means) when orchestra knows the kind; else empty strings."""
        return next((notes for start, notes in KNOWN_KINDS.items() if self.template.startswith(start)), ("", ""))


def _origin(filename: str) -> str:
    parts = Path(filename).parts
    for package in ("dace", "gt4py", "orchestra"):
        if package in parts:
            return "/".join(parts[len(parts) - parts[::-1].index(package) - 1 :])
    return Path(filename).name


def warning_kinds(caught: Sequence[warnings.WarningMessage]) -> list[WarningKind]:
    """The kinds of ``caught`` (``warnings.catch_warnings(record=True)`` records), most frequent first."""
    counts = collections.Counter(
        (w.category.__name__, _NAMES.sub("…", str(w.message)), _origin(w.filename)) for w in caught
    )
    return [
        WarningKind(count, category, template, origin)
        for (category, template, origin), count in sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    ]


def _short(template: str, width: int = 72) -> str:
    return template if len(template) <= width else template[: width - 1] + "…"


def summary_line(kinds: Sequence[WarningKind], shown: int = 3) -> str:
    """``N warning(s) of K kind(s) from DaCe/gt4py while building: 4000x 'Nested ...' (note); ...``.

    No category names: the console shows orchestra's lines only (a user's
    script checks that no ``Warning`` of DaCe's or gt4py's reaches it)."""
    total = sum(kind.count for kind in kinds)
    parts = []
    for kind in kinds[:shown]:
        short = kind.notes[0]
        note = f" ({short})" if short else ""
        parts.append(f"{kind.count}x '{_short(kind.template)}'{note}")  # categories in the file only
    more = f"; {len(kinds) - shown} more kind(s)" if len(kinds) > shown else ""
    return (
        f"{total} warning(s) of {len(kinds)} kind(s) from DaCe/gt4py while building: {'; '.join(parts)}{more}; "
        f"written to the build's {WARNINGS_FILE}"
    )


def write_warnings(caught: Sequence[warnings.WarningMessage], folder: Path) -> list[WarningKind]:
    """Write the table of kinds, then every warning, to ``folder/build_warnings.log``; returns the kinds."""
    kinds = warning_kinds(caught)
    lines = [f"{sum(k.count for k in kinds)} warning(s) of {len(kinds)} kind(s):"]
    for kind in kinds:
        lines.append(f"{kind.count:7d}  {kind.category} from {kind.origin}: {kind.template}")
        if kind.notes[1]:
            lines.append(f"         note: {kind.notes[1]}")
    lines.append("")
    lines += [f"{w.filename}:{w.lineno}: {w.category.__name__}: {w.message}" for w in caught]
    (folder / WARNINGS_FILE).write_text("\n".join(lines) + "\n")
    return kinds
