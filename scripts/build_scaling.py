"""How build time grows with the size of a model: cold builds and one-stencil edits at 16, 64, 256 stencils.

    source scripts/setup_env.sh
    python scripts/build_scaling.py [--stencils 16 64 256] [--per-component 8] [--split-depth 0]
                                    [--split-at edited] [--json FILE]

For each size N the script writes a model module: N distinct gt4py stencils
(each a weighted sum of a field and a 4-point average of another, with its
own weight, so gt4py lowers each one), grouped ``--per-component`` to an
orchestrated component; the model's ``__call__`` calls every component. In a
fresh process, with an empty gt4py cache and an empty orchestra cache, it
times the first orchestrated call (the **cold** build: every stencil lowered
by gt4py, then parse, optimize, compile). Then it edits the first stencil's
weight and times the first call of a new process again (the **edit**: one
stencil lowered, the whole program rebuilt), with both caches kept.

With ``--split-depth 1`` (``DaceConfig.split_depth``) the model's call runs
its Python body and each component is a program of its own: the edit then
rebuilds one component. With ``--split-at edited`` (``DaceConfig.split_at``)
the cold build is one program, the first edit splits the model at the
edited component (every component is then built as a program of its own)
and a third process times a **second edit** of the same stencil (that one
component rebuilt). Stage times are summed over the builds a call made.

One process builds (no MPI), so no waiting rank lowers stencils ahead. The
figures are wall clock on a shared machine: compare rows of one run.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SHAPE = (12, 12, 4)  #: every field; the stencils run on the interior (one halo point each side)
FIELDS = 3  #: fields each component rotates through

_HEADER = '''"""A generated model for scripts/build_scaling.py: {stencils} stencils in {components} components."""
import numpy as np
from gt4py.cartesian.gtscript import PARALLEL, Field, computation, interval

from orchestra import DaceConfig, FrozenStencil, orchestrate

FloatField = Field[np.float64]
SHAPE = {shape}
'''

_STENCIL = '''

def stencil_{index}(a: FloatField, b: FloatField, out: FloatField):
    with computation(PARALLEL), interval(...):
        out = {weight!r} * a + {rest!r} * 0.25 * (b[1, 0, 0] + b[-1, 0, 0] + b[0, 1, 0] + b[0, -1, 0])
'''

_COMPONENT = '''

class Component{index}:
    def __init__(self, config: DaceConfig) -> None:
        self.stencils = [
            FrozenStencil(stencil, backend=config.backend, origin=(1, 1, 0), domain=(10, 10, SHAPE[2]))
            for stencil in ({names},)
        ]
        orchestrate(obj=self, config=config)

    def __call__(self, f0, f1, f2):
{calls}
'''

_MODEL = '''

class Model:
    def __init__(self, config: DaceConfig) -> None:
{members}
        orchestrate(obj=self, config=config)

    def __call__(self, f0, f1, f2):
{calls}
'''


def weight(index: int, edits: int) -> float:
    """Stencil ``index``'s weight; each edit changes the first stencil's."""
    base = 0.2 + 0.6 * ((index * 37) % 101) / 101
    return round(base + (0.01 * edits if index == 0 else 0.0), 6)


def model_source(stencils: int, per_component: int, edits: int) -> str:
    """The generated module's text."""
    components = (stencils + per_component - 1) // per_component
    parts = [_HEADER.format(stencils=stencils, components=components, shape=SHAPE)]
    for index in range(stencils):
        w = weight(index, edits)
        parts.append(_STENCIL.format(index=index, weight=w, rest=round(1.0 - w, 6)))
    for component in range(components):
        first = component * per_component
        members = range(first, min(first + per_component, stencils))
        fields = [f"f{i}" for i in range(FIELDS)]
        calls = []
        for position, _ in enumerate(members):  # a, b read; out written; rotating through the fields
            a, b, out = (fields[(position + shift) % FIELDS] for shift in range(FIELDS))
            calls.append(f"        self.stencils[{position}]({a}, {b}, {out})")
        parts.append(_COMPONENT.format(index=component, names=", ".join(f"stencil_{i}" for i in members),
                                       calls="\n".join(calls)))
    parts.append(_MODEL.format(
        members="\n".join(f"        self.c{i} = Component{i}(config)" for i in range(components)),
        calls="\n".join(f"        self.c{i}(f0, f1, f2)" for i in range(components)),
    ))
    return "".join(parts)


_STAGE = re.compile(r"(parsed|optimized|compiled) in ([0-9.]+) s")


def build_once(folder: Path, cache: Path, split_depth: int, split_at: tuple[str, ...]) -> dict:
    """In this process: import the model in ``folder``, time its first orchestrated call."""
    import numpy as np

    from orchestra import DaceConfig

    stages: dict[str, float] = {"parsed": 0.0, "optimized": 0.0, "compiled": 0.0}
    lines: list[str] = []

    class Stages(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            message = record.getMessage()
            for stage, seconds in _STAGE.findall(message):
                stages[stage] += float(seconds)
            if "parsed in" in message:
                lines.append(message)

    logging.getLogger("orchestra").addHandler(Stages())
    logging.getLogger("orchestra").setLevel(logging.INFO)
    sys.path.insert(0, str(folder))
    start = time.perf_counter()
    import scaled_model

    config = DaceConfig(backend="dace:cpu", orchestration="BuildAndRun", cache_root=cache, split_depth=split_depth,
                        split_at=split_at)
    model = scaled_model.Model(config)
    set_up = time.perf_counter() - start
    rng = np.random.default_rng(0)
    fields = [rng.random(scaled_model.SHAPE) for _ in range(FIELDS)]
    start = time.perf_counter()
    model(*fields)
    first_call = time.perf_counter() - start
    return {"set_up_s": set_up, "first_call_s": first_call, **{f"{k}_s": v for k, v in stages.items()},
            "builds": len(lines), "parse_line": lines[-1] if lines else ""}


def measure(stencils: int, per_component: int, split_depth: int, split_at: str, work: Path) -> dict:
    """Cold build and one-stencil edit of a model of ``stencils`` stencils, each in a fresh process."""
    folder, cache, gt_cache = work / f"model_{stencils}", work / f"cache_{stencils}", work / f"gt_cache_{stencils}"
    folder.mkdir(parents=True)
    env = {**os.environ, "GT_CACHE_ROOT": str(gt_cache), "OMP_NUM_THREADS": "1"}
    row: dict = {"stencils": stencils, "components": (stencils + per_component - 1) // per_component}
    phases = [("cold", 0), ("edit", 1)] + ([("edit2", 2)] if "edited" in split_at.split(",") else [])
    for phase, edits in phases:
        (folder / "scaled_model.py").write_text(model_source(stencils, per_component, edits))
        result = subprocess.run(
            [sys.executable, __file__, "--one", str(folder), str(cache), str(split_depth), split_at],
            env=env, capture_output=True, text=True, check=False,
        )
        if result.returncode != 0:
            raise SystemExit(f"{phase} build of {stencils} stencils failed:\n{result.stderr[-3000:]}")
        row[phase] = json.loads(result.stdout.strip().splitlines()[-1])
        print(f"  {stencils} stencils, {phase}: {row[phase]['first_call_s']:.1f} s, {row[phase]['builds']} build(s) "
              f"(last: {row[phase]['parse_line']})", flush=True)
    return row


def report(rows: list[dict]) -> None:
    print(f"\n{'stencils':>8} {'comp.':>5} | {'cold s':>7} {'per st.':>7} {'parse':>6} {'opt.':>6} {'comp.':>6}"
          f" | {'edit s':>7} {'parse':>6} {'opt.':>6} {'comp.':>6} | {'2nd edit s':>10} {'builds':>6}")
    for row in rows:
        cold, edit = row["cold"], row["edit"]
        print(f"{row['stencils']:>8} {row['components']:>5} | {cold['first_call_s']:>7.1f}"
              f" {cold['first_call_s'] / row['stencils']:>7.2f} {cold.get('parsed_s', 0):>6.1f}"
              f" {cold.get('optimized_s', 0):>6.1f} {cold.get('compiled_s', 0):>6.1f}"
              f" | {edit['first_call_s']:>7.1f} {edit.get('parsed_s', 0):>6.1f}"
              f" {edit.get('optimized_s', 0):>6.1f} {edit.get('compiled_s', 0):>6.1f}"
              + (f" | {row['edit2']['first_call_s']:>10.1f} {row['edit2']['builds']:>6}" if "edit2" in row else ""))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stencils", type=int, nargs="+", default=[16, 64, 256])
    parser.add_argument("--per-component", type=int, default=8)
    parser.add_argument("--split-depth", type=int, default=0, help="DaceConfig.split_depth (0: one program)")
    parser.add_argument("--split-at", default="", help="DaceConfig.split_at, comma-separated (e.g. edited)")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--one", nargs=4, metavar=("FOLDER", "CACHE", "DEPTH", "AT"), help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.one:
        folder, cache, split_depth, split_at = arguments.one
        names = tuple(name for name in split_at.split(",") if name)
        print(json.dumps(build_once(Path(folder), Path(cache), int(split_depth), names)))
        return
    rows = []
    with tempfile.TemporaryDirectory(prefix="orchestra_build_scaling_") as work:
        for stencils in arguments.stencils:
            rows.append(measure(stencils, arguments.per_component, arguments.split_depth, arguments.split_at,
                                Path(work)))
    report(rows)
    if arguments.json:
        arguments.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
