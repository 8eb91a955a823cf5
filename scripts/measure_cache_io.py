"""Count the file-system operations each MPI rank makes on the build cache while loading.

    source scripts/setup_env.sh
    python scripts/measure_cache_io.py --ranks 6,24 --json cache_io.json

What it measures: for an MPI job that *loads* a prebuilt orchestrated program
(``tests/distributed/mpi_build_worker.py --mode Run``: the edge model, whose
code differs by the tile edges a rank touches), how many opens, stat-like
calls, reads (and bytes), ``mmap``-s of files, directory listings and
modifying calls (create-opens, writes, renames, mkdirs, unlinks, ``flock``,
``fsync``) every rank makes

* under the shared cache root (``--cache-root``), and
* under a node-local folder (``--node-local``, default
  ``$ORCHESTRA_NODE_LOCAL_DIR`` or ``/dev/shm``), where loads go once builds
  are staged per node (issue 25);

and how long the load takes (``load_s``, ``first_call_s`` from the worker's
``RESULT`` lines).

How, for each rank count of ``--ranks`` (``6`` = ``--cube --layout 1x1``,
``24`` = cube 2x2, ``54`` = cube 3x3, ``6*k*k`` = cube kxk, another square
``k*k`` = one tile kxk; or explicitly ``cube:2x2``, ``tile:3x4``):

1. ``--mode Build`` on one tile with ``min(layout, 3)`` ranks along each
   side, which builds every code-path class the layout has (a 3x3 build
   serves any larger layout with the same per-rank domain, and a tile build
   serves the cube); nothing is compiled when the builds are there;
2. ``--mode Run`` without strace: the load times reported;
3. ``--mode Run`` with every rank started as
   ``strace -f -qq -y -s 0 -e trace=<file syscalls> -o TRACES/trace.<rank> python worker ...``
   (``mpirun`` starts this script in a small mode that ``exec``-s strace with
   the rank from ``OMPI_COMM_WORLD_RANK``, so strace is the rank's process and
   python its child); the traces are parsed: a call counts when its path
   argument, its directory descriptor plus relative path, or the ``-y``
   annotation of its descriptor lies at or under the folder.

A Run job that finds no build (orchestra's sources changed since the build:
they are part of the key) is built again and repeated once.

Output: three tables (cache root; node-local; times) and, per job, the
files touched most, with their counts summed over ranks (key folders shown as
``<key>``); ``--json FILE`` writes every figure, per-rank counts included.
Modifying calls on the cache root are split by where they land: ``lock``
(``.locks/``), ``request`` (the program folder itself, ``last_request.json``
and its temporary file), ``staging`` (``.staging/``) and ``build`` (inside a
build folder: should be 0 in Run mode).

Caveats:

* strace sees system calls, so the counts include what ``dlopen`` does
  (an ``openat``, a 832-byte ELF header ``read``, ``mmap``-s of the segments:
  mapped bytes are counted apart from bytes read, and pages later faulted in
  are not counted at all), and everything orchestra reads besides the
  library: ``COMPLETE`` marker stats, ``manifest.json`` reads, the sha256 of
  every loaded file, ``last_request.json``;
* every call counts, failed ones too (a stat answering ENOENT is still a
  metadata request to the file server); ``failed`` counts them apart;
* the counts cover the whole life of each rank (import, build lookup, load,
  the worker's Python-mode reference run), but only the loading touches the
  cache root;
* Open MPI's own shared-memory files (``open_mpi.*`` and the like) in the
  node-local folder are left out (counted as ``ignored``); its ``access``
  checks of the folder itself are counted;
* ``load_s`` comes from the run without strace (strace slows every system
  call); the traced run's times are shown beside it for comparison; the
  machine's load average when each run started is shown too (other jobs on
  the machine slow the ranks down; the counts do not change);
* ``ORCHESTRA_TIMINGS`` is unset for the jobs; other ``ORCHESTRA_*`` variables
  (``ORCHESTRA_NODE_LOCAL_DIR``, ``ORCHESTRA_RANKS_PER_NODE``, ...) are
  passed through; ``OMP_NUM_THREADS=1``.

On a 2-core machine a rank needs about 250 MB and the ranks share the cores:
24 ranks take a few minutes under strace, 54 are too many.
"""

from __future__ import annotations

import argparse
import codecs
import dataclasses
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any, Iterable, Iterator, Optional

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

#: First argument of this script when ``mpirun`` starts it as a rank's strace launcher.
EXEC_UNDER_STRACE = "--exec-under-strace"

OPEN_CALLS = {"open", "openat", "creat"}
STAT_CALLS = {
    "stat", "lstat", "fstat", "newfstatat", "statx",
    "access", "faccessat", "faccessat2", "readlink", "readlinkat",
}
READ_CALLS = {"read", "pread64"}
LIST_CALLS = {"getdents64"}
MAP_CALLS = {"mmap"}
MODIFYING_CALLS = {
    "write", "pwrite64", "mkdir", "mkdirat", "rename", "renameat", "renameat2",
    "unlink", "unlinkat", "flock", "fsync", "fdatasync",
}
TRACED_CALLS = sorted(OPEN_CALLS | STAT_CALLS | READ_CALLS | LIST_CALLS | MAP_CALLS | MODIFYING_CALLS)
#: Calls whose path arguments are plain strings (the first, or the first two).
PATH_CALLS = {"open": 1, "creat": 1, "stat": 1, "lstat": 1, "access": 1, "readlink": 1,
              "mkdir": 1, "unlink": 1, "rename": 2}
#: Calls whose paths come as (directory descriptor, string) pairs.
AT_CALLS = {"openat", "newfstatat", "statx", "faccessat", "faccessat2", "readlinkat",
            "mkdirat", "unlinkat", "renameat", "renameat2"}

STRACE_OPTIONS = [
    "-f", "-qq", "-y", "-s", "0", "-e", "signal=none",
    # "?": names this architecture lacks (open, stat on aarch64) are ignored
    "-e", "trace=" + ",".join("?" + name for name in TRACED_CALLS),
]

WRITE_FLAGS = ("O_WRONLY", "O_RDWR", "O_CREAT", "O_TRUNC", "O_APPEND")
#: Open MPI's (and PSM's) shared-memory files, left out of the node-local counts.
MPI_SHARED_MEMORY = re.compile(r"^(open_mpi\.|sm_segment\.|vader_segment\.|psm|sem\.)")
KEY_FOLDER = re.compile(r"^[0-9a-f]{20,}")

LINE = re.compile(r"^(\d+)\s+(.*)$")
RESUMED = re.compile(r"^<\.\.\. \w+ resumed>\s?(.*)$")
CALL = re.compile(r"^(\w+)\((.*)\)\s+=\s+(-?\d+|0x[0-9a-fA-F]+|\?)(.*)$")
STRING = r'"((?:[^"\\]|\\.)*)"'
AT_PAIR = re.compile(r"(?:AT_FDCWD|-?\d+)(?:<(.*?)>)?, " + STRING)
FD_ANNOTATION = re.compile(r"(?:^|, )-?\d+<(.*?)>(?=, |$)")

#: Per-area counters, in table order.
COUNTS = ("open", "stat", "read", "read_bytes", "mmap", "mmap_bytes", "list", "modify", "failed")
#: The counters that are calls (not bytes, not a subset).
OPERATIONS = ("open", "stat", "read", "mmap", "list", "modify")


# ---------------------------------------------------------------- layouts and jobs
@dataclasses.dataclass(frozen=True)
class Layout:
    """A decomposition of the worker: one tile or the cube, ``ni x nj`` ranks per tile."""

    cube: bool
    ni: int
    nj: int

    @property
    def ranks(self) -> int:
        return (6 if self.cube else 1) * self.ni * self.nj

    @property
    def name(self) -> str:
        return f"{'cube' if self.cube else 'tile'} {self.ni}x{self.nj}"

    def worker_args(self) -> list[str]:
        return ["--layout", f"{self.ni}x{self.nj}", *(["--cube"] if self.cube else [])]

    def covering_build(self) -> "Layout":
        """The smallest one-tile layout with every code-path class of this one."""
        return Layout(False, min(self.ni, 3), min(self.nj, 3))


def parse_layout(text: str) -> Layout:
    """``24`` (cube 2x2), ``9`` (tile 3x3), ``cube:2x2`` or ``tile:3x4``."""
    kind, _, shape = text.strip().partition(":")
    if shape:
        ni, _, nj = shape.partition("x")
        if kind not in ("cube", "tile"):
            raise argparse.ArgumentTypeError(f"{text!r}: expected cube:AxB or tile:AxB")
        return Layout(kind == "cube", int(ni), int(nj or ni))
    if not kind.isdigit():
        raise argparse.ArgumentTypeError(f"{text!r}: expected a rank count, cube:AxB or tile:AxB")
    ranks = int(kind)
    for cube, per_tile in ((True, ranks // 6), (False, ranks)):
        side = round(per_tile ** 0.5)
        if side >= 1 and (6 if cube else 1) * side * side == ranks:
            return Layout(cube, side, side)
    raise argparse.ArgumentTypeError(f"{ranks} ranks is neither 6*k*k (cube) nor k*k (one tile)")


def parse_layouts(text: str) -> list[Layout]:
    return [parse_layout(part) for part in text.split(",") if part.strip()]


@dataclasses.dataclass
class Job:
    """One mpirun of the worker."""

    returncode: int
    output: str
    found: list[dict[str, str]]
    wall_s: float
    load_average: float  #: of the machine (1 minute) when the job started: other jobs slow it down

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and all(r.get("ok") == "1" for r in self.found)


def run_worker(layout: Layout, mode: str, options: argparse.Namespace, traces: Optional[Path] = None) -> Job:
    """Run the worker at ``layout`` in ``mode``; under strace when ``traces`` is given."""
    # imported here: a rank's strace launcher (``exec_under_strace``) needs none of it
    from tests.distributed.test_mpi_build import WORKER, results
    from tests.mpi_launcher import run_mpi

    args = ["--cache-root", str(options.cache_root), "--mode", mode, "--nx", str(options.nx),
            "--nz", str(options.nz), *layout.worker_args()]
    script, launcher = WORKER, []
    if traces is not None:
        script, launcher = Path(__file__).resolve(), [EXEC_UNDER_STRACE, str(traces), str(WORKER)]
    load_average, start = os.getloadavg()[0], time.perf_counter()
    process = run_mpi(layout.ranks, script, *launcher, *args, timeout=options.timeout, check=False)
    wall_s = time.perf_counter() - start
    return Job(process.returncode, process.stdout, results(process.stdout), wall_s, load_average)


def failure(job: Job, what: str) -> SystemExit:
    tail = "\n".join(job.output.splitlines()[-40:])
    return SystemExit(f"{what} failed (exit {job.returncode}, {len(job.found)} RESULT lines):\n{tail}")


def build(layout: Layout, options: argparse.Namespace) -> Job:
    target = layout.covering_build()
    job = run_worker(target, "Build", options)
    if job.returncode != 0:
        raise failure(job, f"Build at {target.name}")
    compiled = sum(r.get("built") == "1" for r in job.found)
    print(f"  build at {target.name}: {compiled} compiled, {job.wall_s:.1f} s", flush=True)
    return job


def load(layout: Layout, options: argparse.Namespace, traces: Optional[Path] = None) -> Job:
    """A Run job at ``layout``; built again and repeated once if its build is missing."""
    for attempt in (1, 2):
        if traces is not None:
            shutil.rmtree(traces, ignore_errors=True)
            traces.mkdir(parents=True)
        job = run_worker(layout, "Run", options, traces)
        if job.ok or attempt == 2 or "MissingBuildError" not in job.output:
            break
        print("  no build for the key (orchestra's sources changed?): building again", flush=True)
        build(layout, options)
    if not job.ok or len(job.found) != layout.ranks:
        raise failure(job, f"Run at {layout.name}{' under strace' if traces else ''}")
    return job


# ---------------------------------------------------------------- strace launcher
def exec_under_strace(argv: list[str]) -> None:
    """In a rank: replace this process by ``strace ... python WORKER args`` (never returns)."""
    traces, worker, *args = argv
    rank = next((os.environ[name] for name in ("OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK")
                 if name in os.environ), f"pid{os.getpid()}")
    strace = shutil.which("strace") or "strace"
    command = [strace, *STRACE_OPTIONS, "-o", str(Path(traces) / f"trace.{rank}"),
               sys.executable, worker, *args]
    os.execv(strace, command)


# ---------------------------------------------------------------- trace parsing
def complete_calls(lines: Iterable[str]) -> Iterator[str]:
    """The calls of one strace ``-f`` file, unfinished and resumed halves joined."""
    pending: dict[str, str] = {}
    for line in lines:
        match = LINE.match(line)
        if match is None:
            continue
        pid, text = match.groups()
        if text.endswith("<unfinished ...>"):
            pending[pid] = text[: -len("<unfinished ...>")]
            continue
        resumed = RESUMED.match(text)
        if resumed is not None:
            text = pending.pop(pid, "") + resumed.group(1)
        yield text


def unescape(text: str) -> str:
    return codecs.escape_decode(text.encode("utf-8", "surrogateescape"))[0].decode("utf-8", "surrogateescape")


def annotation(text: str) -> str:
    return text[: -len(" (deleted)")] if text.endswith(" (deleted)") else text


def call_paths(name: str, args: str) -> list[str]:
    """The absolute paths a call works on (as far as the trace tells)."""
    if name in PATH_CALLS:
        return [unescape(s) for s in re.findall(STRING, args)[: PATH_CALLS[name]]]
    if name in AT_CALLS:
        paths = []
        for directory, path in AT_PAIR.findall(args):
            path = unescape(path)
            if not path.startswith("/"):
                path = os.path.join(annotation(directory), path) if directory else path
            paths.append(path)
        return paths
    found = FD_ANNOTATION.search(args)
    return [annotation(found.group(1))] if found else []


def category(name: str, args: str) -> Optional[str]:
    """Which counter a call adds to (``modify`` for opens that create or write)."""
    if name in OPEN_CALLS:
        return "modify" if name == "creat" or any(flag in args for flag in WRITE_FLAGS) else "open"
    for calls, label in ((STAT_CALLS, "stat"), (READ_CALLS, "read"), (LIST_CALLS, "list"),
                         (MAP_CALLS, "mmap"), (MODIFYING_CALLS, "modify")):
        if name in calls:
            return label
    return None


def mapped_bytes(args: str) -> int:
    parts = args.split(", ")
    return int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 0


@dataclasses.dataclass
class Area:
    """A folder whose operations are counted, under its given and resolved names."""

    label: str
    roots: tuple[str, ...]

    @classmethod
    def of(cls, label: str, folder: Path) -> "Area":
        names = {os.path.normpath(os.path.abspath(folder)), os.path.realpath(folder)}
        return cls(label, tuple(sorted(names)))

    def relative(self, path: str) -> Optional[str]:
        """``path`` relative to the folder (``.`` for itself), or None outside it."""
        path = os.path.normpath(path)
        for root in self.roots:
            if path == root:
                return "."
            if path.startswith(root + "/"):
                return path[len(root) + 1:]
        return None


def where_modified(relative: str) -> str:
    """Where a modifying call on the cache root lands: lock, staging, build or request."""
    parts = relative.split("/")
    if parts[0] == ".locks":
        return "lock"
    if parts[0] == ".staging":
        return "staging"
    if len(parts) >= 2 and KEY_FOLDER.match(parts[1]):
        return "build"
    return "request"


def file_label(relative: str) -> str:
    """A path with keys, the owner and random parts of staging names, and temporary names generalized.

    >>> file_label(".staging/0123456789abcdef0123--vm--5187--x1/a.b.q_pnoo_d.tmp")
    '.staging/<key>-*/a.b.*.tmp'
    >>> file_label("orchestra-0/trash--vm--5187--xgntra9t/discarded")
    'orchestra-0/trash-*/discarded'
    """
    label = re.sub(r"[0-9a-f]{20,}", "<key>", relative)
    label = re.sub(r"(<key>|trash)-[^/]+", r"\1-*", label)
    return re.sub(r"\.[A-Za-z0-9_]{8}\.tmp$", ".*.tmp", label)


@dataclasses.dataclass
class AreaCounts:
    """What one rank did under one area."""

    totals: Counter = dataclasses.field(default_factory=Counter)
    files: dict[str, Counter] = dataclasses.field(default_factory=dict)

    def add(self, relative: str, label: str, ret: str, args: str, modified_in: Optional[str]) -> None:
        counts = Counter({label: 1})
        if label == "read" and ret.isdigit():
            counts["read_bytes"] = int(ret)
        if label == "mmap":
            counts["mmap_bytes"] = mapped_bytes(args)
        if ret == "-1":
            counts["failed"] = 1
        if modified_in is not None:
            counts[f"modify:{modified_in}"] = 1
        self.totals.update(counts)
        self.files.setdefault(file_label(relative), Counter()).update(counts)


def count_trace(path: Path, cache: Area, node_local: Area) -> dict[str, AreaCounts]:
    """Counts of one rank's trace file, by area label."""
    counts = {cache.label: AreaCounts(), node_local.label: AreaCounts()}
    needles = cache.roots + node_local.roots
    with open(path, errors="surrogateescape") as stream:
        for text in complete_calls(stream):
            if any(needle in text for needle in needles):
                count_call(text, cache, node_local, counts)
    return counts


def count_call(text: str, cache: Area, node_local: Area, counts: dict[str, AreaCounts]) -> None:
    """Add one traced call to the counts of the area its path lies in, if any."""
    call = CALL.match(text)
    label = category(call.group(1), call.group(2)) if call else None
    if label is None:
        return
    name, args, ret, _ = call.groups()
    paths = call_paths(name, args)
    for area in (cache, node_local):
        relative = next(filter(None, map(area.relative, paths)), None)
        if relative is None:
            continue
        if area is node_local and MPI_SHARED_MEMORY.match(relative):
            counts[area.label].totals["ignored"] += 1
        else:
            modified_in = where_modified(relative) if label == "modify" and area is cache else None
            counts[area.label].add(relative, label, ret, args, modified_in)
        return


def rank_of(trace: Path) -> str:
    return trace.name.partition(".")[2]


# ---------------------------------------------------------------- summaries
def spread(values: list[float]) -> dict[str, float]:
    if not values:
        return {"mean": 0.0, "max": 0.0}
    return {"mean": statistics.mean(values), "max": max(values)}


def operations(counts: Counter) -> int:
    return sum(counts[key] for key in OPERATIONS)


def files_over_ranks(per_rank: dict[str, AreaCounts]) -> dict[str, dict[str, int]]:
    """Counts by file summed over ranks, with how many ranks touched each; most calls first."""
    files: dict[str, Counter] = {}
    for counts in per_rank.values():
        for label, file_counts in counts.files.items():
            files.setdefault(label, Counter()).update(file_counts + Counter(ranks=1))
    ordered = sorted(files.items(), key=lambda item: -operations(item[1]))
    return {label: dict(counts) for label, counts in ordered}


def reads_a_build(counts: AreaCounts) -> bool:
    return any(c["read"] or c["mmap"] for label, c in counts.files.items() if "<key>" in label)


def summarize_area(per_rank: dict[str, AreaCounts]) -> dict[str, Any]:
    """Totals, per-rank mean/max, per-file sums and per-rank counts of one area over a job."""
    totals: Counter = sum((counts.totals for counts in per_rank.values()), Counter())
    return {
        "totals": {key: totals[key] for key in sorted(totals)},
        "per_rank": {key: spread([c.totals[key] for c in per_rank.values()]) for key in COUNTS},
        "ranks_touching": sum(operations(c.totals) > 0 for c in per_rank.values()),
        "ranks_reading_builds": sum(reads_a_build(c) for c in per_rank.values()),
        "files": files_over_ranks(per_rank),
        "by_rank": {rank: dict(per_rank[rank].totals) for rank in sorted(per_rank, key=_rank_order)},
    }


def _rank_order(rank: str) -> tuple[int, str]:
    return (int(rank), "") if rank.isdigit() else (1 << 30, rank)


def times(job: Job) -> dict[str, Any]:
    def figures(name: str) -> dict[str, float]:
        values = [float(r[name]) for r in job.found if float(r.get(name, -1)) >= 0]
        return {"median": statistics.median(values), "max": max(values)} if values else {}

    return {
        "job_s": job.wall_s,
        "load_average_before": job.load_average,
        "load_s": figures("load_s"),
        "first_call_s": figures("first_call_s"),
        "setup_s": figures("setup_s"),
        "ok_ranks": sum(r.get("ok") == "1" and r.get("ran") == "1" for r in job.found),
    }


def measure(layout: Layout, options: argparse.Namespace, traces: Path) -> dict[str, Any]:
    print(f"{layout.name} ({layout.ranks} ranks)", flush=True)
    build(layout, options)
    plain = load(layout, options)
    print(f"  run: {plain.wall_s:.1f} s", flush=True)
    traced = load(layout, options, traces)
    print(f"  run under strace: {traced.wall_s:.1f} s", flush=True)
    cache = Area.of("cache_root", options.cache_root)
    node_local = Area.of("node_local", options.node_local)
    per_rank = {rank_of(trace): count_trace(trace, cache, node_local)
                for trace in sorted(traces.glob("trace.*"))}
    return {
        "layout": layout.name,
        "ranks": layout.ranks,
        "classes": len({r["class"] for r in plain.found}),
        "trace_files": len(per_rank),
        "untraced": times(plain),
        "traced": times(traced),
        **{area: summarize_area({rank: counts[area] for rank, counts in per_rank.items()})
           for area in (cache.label, node_local.label)},
    }


# ---------------------------------------------------------------- output
def per_rank_cell(area: dict[str, Any], key: str, scale: float = 1.0) -> str:
    figures = area["per_rank"][key]
    return f"{figures['mean'] / scale:.0f}/{figures['max'] / scale:.0f}"


def modify_cell(area: dict[str, Any]) -> str:
    totals = area["totals"]
    parts = [f"{kind}:{totals[f'modify:{kind}']}" for kind in ("lock", "request", "staging", "build")
             if totals.get(f"modify:{kind}")]
    return f"{totals.get('modify', 0)}" + (f" ({' '.join(parts)})" if parts else "")


def area_table(rows: list[dict[str, Any]], area: str) -> list[str]:
    header = (f"{'ranks':>5} {'layout':<9}{'cls':>4}{'opens':>7}{'stats':>7}{'reads':>7}{'MiB read':>9}"
              f"{'mmaps':>6}{'lists':>6}{'fail':>6}  {'open/rank':>9}{'stat/rank':>10}{'read/rank':>10}"
              f"{'KiB/rank':>9}{'touch':>6}{'readers':>8}  modifying")
    lines = [header]
    for row in rows:
        data = row[area]
        totals = Counter(data["totals"])
        lines.append(
            f"{row['ranks']:>5} {row['layout']:<9}{row['classes']:>4}{totals['open']:>7}{totals['stat']:>7}"
            f"{totals['read']:>7}{totals['read_bytes'] / 2**20:>9.2f}{totals['mmap']:>6}{totals['list']:>6}"
            f"{totals['failed']:>6}  {per_rank_cell(data, 'open'):>9}{per_rank_cell(data, 'stat'):>10}"
            f"{per_rank_cell(data, 'read'):>10}{per_rank_cell(data, 'read_bytes', 1024):>9}"
            f"{data['ranks_touching']:>6}{data['ranks_reading_builds']:>8}  {modify_cell(data)}"
        )
    return lines


def median_max(figures: dict[str, float]) -> str:
    return f"{figures['median']:.3f}/{figures['max']:.3f}" if figures else "-"


def times_table(rows: list[dict[str, Any]]) -> list[str]:
    names = ("ranks", "layout", "load_s", "first_call_s", "setup_s", "job_s", "ok", "machine load",
             "strace load_s", "strace first_call", "strace job_s")
    widths = (5, 9, 15, 15, 15, 7, 6, 13, 15, 18, 13)
    lines = [" ".join(f"{name:>{width}}" for name, width in zip(names, widths))]
    for row in rows:
        plain, traced = row["untraced"], row["traced"]
        cells = (row["ranks"], row["layout"], median_max(plain["load_s"]), median_max(plain["first_call_s"]),
                 median_max(plain["setup_s"]), f"{plain['job_s']:.1f}", f"{plain['ok_ranks']}/{row['ranks']}",
                 f"{plain['load_average_before']:.1f}", median_max(traced["load_s"]),
                 median_max(traced["first_call_s"]), f"{traced['job_s']:.1f}")
        lines.append(" ".join(f"{cell:>{width}}" for cell, width in zip(cells, widths)))
    return lines


def files_table(row: dict[str, Any], area: str, most: int) -> list[str]:
    files = row[area]["files"]
    if not files:
        return []
    lines = [f"{row['layout']}, {area}: files (sums over ranks; ranks = how many touched it)",
             f"  {'ranks':>5}{'opens':>7}{'stats':>7}{'reads':>7}{'KiB read':>10}{'mmaps':>6}{'lists':>6}"
             f"{'modify':>7}{'fail':>6}  path"]
    for label, c in list(files.items())[:most]:
        lines.append(
            f"  {c['ranks']:>5}{c.get('open', 0):>7}{c.get('stat', 0):>7}{c.get('read', 0):>7}"
            f"{c.get('read_bytes', 0) / 1024:>10.1f}{c.get('mmap', 0):>6}{c.get('list', 0):>6}"
            f"{c.get('modify', 0):>7}{c.get('failed', 0):>6}  {label}"
        )
    if len(files) > most:
        lines.append(f"  ... {len(files) - most} more (--json has all)")
    return lines


def report(rows: list[dict[str, Any]], options: argparse.Namespace) -> str:
    note = "x/rank: mean/max over ranks; touch: ranks with any call; readers: ranks reading a build's files"
    lines = [f"\nCache root {options.cache_root} (traced runs; {note})", *area_table(rows, "cache_root"),
             f"\nNode-local {options.node_local}", *area_table(rows, "node_local"),
             "\nTimes (median/max over ranks; left: run without strace, right: under strace;"
             " machine load: 1-minute load average when the run started)",
             *times_table(rows)]
    for row in rows:
        for area in ("cache_root", "node_local"):
            table = files_table(row, area, options.files)
            lines.extend(["", *table] if table else [])
    return "\n".join(lines)


def git_state() -> dict[str, Any]:
    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], cwd=REPO_ROOT, capture_output=True, text=True, check=False)
        return done.stdout.strip()

    return {"commit": git("rev-parse", "HEAD"),
            "orchestra_changed": git("status", "--porcelain", "--", "orchestra")}


# ---------------------------------------------------------------- main
def default_node_local() -> Path:
    configured = os.environ.get("ORCHESTRA_NODE_LOCAL_DIR", "").strip()
    return Path(configured) if configured and configured.lower() != "none" else Path("/dev/shm")


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ranks", dest="layouts", default="6,24", type=parse_layouts,
                        help="comma-separated: 6, 24, 54 (cube), 9 (tile 3x3), cube:2x2, tile:3x4")
    parser.add_argument("--cache-root", type=Path, default=None, help="default: a fresh temporary folder")
    parser.add_argument("--node-local", type=Path, default=default_node_local(),
                        help="node-local folder also counted (default $ORCHESTRA_NODE_LOCAL_DIR or /dev/shm)")
    parser.add_argument("--json", type=Path, default=None, help="write every figure to this file")
    parser.add_argument("--keep-traces", action="store_true",
                        help="keep the strace files (the path is printed)")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds for each mpirun")
    parser.add_argument("--nx", type=int, default=6, help="worker: per-rank cells along i and j")
    parser.add_argument("--nz", type=int, default=2)
    parser.add_argument("--files", type=int, default=12, help="files shown per job and area")
    return parser.parse_args(argv)


def prepare_environment() -> None:
    if shutil.which("strace") is None:
        raise SystemExit("strace is not on PATH")
    if os.environ.pop("ORCHESTRA_TIMINGS", None) is not None:
        print("ORCHESTRA_TIMINGS unset for the jobs", flush=True)
    os.environ["OMP_NUM_THREADS"] = "1"
    os.environ.setdefault("OMPI_MCA_mpi_yield_when_idle", "1")  # waiting ranks yield their core


def main(argv: list[str]) -> None:
    if argv[:1] == [EXEC_UNDER_STRACE]:
        exec_under_strace(argv[1:])
    options = parse_args(argv)
    prepare_environment()
    scratch = Path(tempfile.mkdtemp(prefix="measure_cache_io_"))
    temporary_cache = options.cache_root is None
    options.cache_root = (options.cache_root or scratch / "cache").absolute()
    load_average = os.getloadavg()
    try:
        rows = [measure(layout, options, scratch / "traces" / layout.name.replace(" ", "_"))
                for layout in options.layouts]
    finally:
        if temporary_cache:
            shutil.rmtree(options.cache_root, ignore_errors=True)
        if not options.keep_traces:
            shutil.rmtree(scratch, ignore_errors=True)
    print(report(rows, options))
    if options.keep_traces:
        print(f"\ntraces kept in {scratch / 'traces'}")
    environment = {name: value for name, value in os.environ.items() if name.startswith("ORCHESTRA_")}
    if options.json:
        options.json.write_text(json.dumps({
            "command": [sys.executable, *sys.argv], "cache_root": str(options.cache_root),
            "node_local": str(options.node_local), "environment": environment,
            "repository": str(REPO_ROOT), "git": git_state(),
            "load_average_before": load_average, "cpus": os.cpu_count(), "jobs": rows,
        }, indent=1))
        print(f"figures written to {options.json}")


if __name__ == "__main__":
    main(sys.argv[1:])
