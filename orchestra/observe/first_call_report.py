"""What the first call of an orchestrated program built and found: one log line, from rank 0.

A first call obtains the library of every program it runs: the whole model's
or, in a split build, each component's and each one-stencil program's. The
outermost orchestrated call collects what each of them obtained (built in
this job by some rank, or found in the cache; the stage times the build's
manifest records; the load time) and, when it returns, rank 0 logs one line::

    DynamicalCore.__call__: first call 11.4 s: built 1 of 10 programs (Hyperdiffusion.__call__),
    found 9 in the cache: parse 1.2 s, optimize 2.0 s, compile 3.1 s; loaded in 0.41 s

Nothing here communicates. A program counts as built when the build
round's outcome reduction says a rank made it (:class:`orchestra.distributed.coordinator.BuildRound`)
or, for a program a rank obtains alone (inside a split build's Python body,
where another rank may have won the key's lock), when its manifest was
created after this rank's process started, or after its last first call
ended if it had one (the manifest's UTC time, to the second, by the
builder's clock): a rank that reaches the call late, under load, still
counts the build a faster rank of the job made before it came, and a
program this process built in an earlier call counts as found. The stage
times come from the manifest of the entry rank 0 loaded.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import datetime
import os
import time
from typing import Iterator, Mapping, Optional

#: how many built programs the line names before "..."
NAMED = 4


@dataclasses.dataclass(frozen=True)
class Obtained:
    """One program a first call obtained."""

    label: str
    #: a rank made it in this obtain, as the build round's reduction says (False: found, or not known)
    made: bool
    #: when its manifest says the build was made (ISO 8601, UTC, to the second)
    created: str
    #: seconds per build stage, from the build's manifest (empty if it has none)
    stage_seconds: Mapping[str, float]
    load_seconds: float


def _process_started() -> float:
    """When this process started (epoch seconds): Linux's record of it, else when this module was imported."""
    try:
        with open("/proc/self/stat") as stat:
            ticks = int(stat.read().rpartition(")")[2].split()[19])  # field 22, starttime, in clock ticks after boot
        with open("/proc/stat") as system:
            booted = next(int(line.split()[1]) for line in system if line.startswith("btime "))
        return booted + ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, StopIteration):
        return _IMPORTED


_IMPORTED = time.time()
#: when this rank's process started: builds published after it were made by this job (or one beside it)
PROCESS_STARTED = _process_started()
#: builds published after this count as this job's: the process's start, then the end of the last first
#: call that collected (what this process built in an earlier call is found now, not built again)
_counting_from = [PROCESS_STARTED]


@dataclasses.dataclass
class FirstCall:
    """What the outermost first call obtained; builds published after ``started`` (epoch seconds) count as built."""

    started: float = dataclasses.field(default_factory=lambda: min(_counting_from[0], time.time()))
    obtained: list[Obtained] = dataclasses.field(default_factory=list)

    def built(self, item: Obtained) -> bool:
        """Made by a rank of this job, or published after ``started``."""
        if item.made:
            return True
        try:
            created = datetime.datetime.fromisoformat(item.created).timestamp()
        except ValueError:
            return False
        # The manifest's time is cut to the second: a build published before the process started reads as
        # earlier than the start, and one made since (a build takes more than a second, and is published
        # at its end) as later.
        return created > self.started


_COLLECTING: contextvars.ContextVar[Optional[FirstCall]] = contextvars.ContextVar(
    "orchestra_first_call_report", default=None
)


@contextlib.contextmanager
def collecting() -> Iterator[Optional[FirstCall]]:
    """Collect what is obtained inside the block; yields None when an outer call already collects."""
    if _COLLECTING.get() is not None:
        yield None
        return
    first_call = FirstCall()
    token = _COLLECTING.set(first_call)
    try:
        yield first_call
    finally:
        _COLLECTING.reset(token)
        _counting_from[0] = time.time()


def record(item: Obtained) -> None:
    """Note a program obtained, if an outer call collects (else nothing)."""
    first_call = _COLLECTING.get()
    if first_call is not None:
        first_call.obtained.append(item)


def summary(label: str, seconds: float, first_call: FirstCall) -> str:
    """The log line of a first call of ``seconds`` that obtained something."""
    obtained = first_call.obtained
    built = [item for item in obtained if first_call.built(item)]
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
