"""What the first call of an orchestrated program built and found: one log line, from rank 0.

A first call obtains the library of every program it runs: the whole model's
or, in a split build, each component's and each one-stencil program's. The
outermost orchestrated call collects what each of them obtained (built in
this job by some rank, or found in the cache; the stage times the build's
manifest records; the load time) and, when it returns, rank 0 logs one line::

    DynamicalCore.__call__: first call 11.4 s: built 1 of 10 programs (Hyperdiffusion.__call__),
    found 9 in the cache: parse 1.2 s, optimize 2.0 s, compile 3.1 s; loaded in 0.41 s

Nothing here communicates: whether a build was made rides in the build
round's outcome reduction (:class:`orchestra.distributed.BuildRound`), and
the stage times come from the manifest of the entry rank 0 loaded.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
from typing import Iterator, Mapping, Optional

#: how many built programs the line names before "..."
NAMED = 4


@dataclasses.dataclass(frozen=True)
class Obtained:
    """One program a first call obtained."""

    label: str
    #: made in this job, by some rank (False: found in the cache)
    built: bool
    #: seconds per build stage, from the build's manifest (empty if it has none)
    stage_seconds: Mapping[str, float]
    load_seconds: float


_COLLECTING: contextvars.ContextVar[Optional[list[Obtained]]] = contextvars.ContextVar(
    "orchestra_first_call_report", default=None
)


@contextlib.contextmanager
def collecting() -> Iterator[Optional[list[Obtained]]]:
    """Collect what is obtained inside the block; yields None when an outer call already collects."""
    if _COLLECTING.get() is not None:
        yield None
        return
    obtained: list[Obtained] = []
    token = _COLLECTING.set(obtained)
    try:
        yield obtained
    finally:
        _COLLECTING.reset(token)


def record(item: Obtained) -> None:
    """Note a program obtained, if an outer call collects (else nothing)."""
    obtained = _COLLECTING.get()
    if obtained is not None:
        obtained.append(item)


def summary(label: str, seconds: float, obtained: list[Obtained]) -> str:
    """The log line of a first call of ``seconds`` that obtained ``obtained`` (not empty)."""
    built = [item for item in obtained if item.built]
    noun = "program" if len(obtained) == 1 else "programs"
    line = f"{label}: first call {seconds:.1f} s: built {len(built)} of {len(obtained)} {noun}"
    if built:
        names = list(dict.fromkeys(item.label for item in built))
        line += f" ({', '.join(names[:NAMED])}{', ...' if len(names) > NAMED else ''})"
    line += f", found {len(obtained) - len(built)} in the cache"
    timed = [item.stage_seconds for item in built if item.stage_seconds]
    if timed:
        stages = {stage: sum(times.get(stage, 0.0) for times in timed) for stage in ("parse", "optimize", "compile")}
        line += ": " + ", ".join(f"{stage} {value:.1f} s" for stage, value in stages.items())
    return line + f"; loaded in {sum(item.load_seconds for item in obtained):.2f} s"
