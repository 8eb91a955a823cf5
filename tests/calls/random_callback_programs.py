"""Random programs of nested components and callbacks: Python mode against orchestrated, bit for bit.

:func:`generate` draws a program from a seed: a chain of 1-4 orchestrated
components (depths 0-3), all sharing one :class:`~tests.calls.callback_program_parts.Halo`,
each running a random body of

- callbacks on arrays fixed at build time (2-D, 3-D, a view, dict-held
  arrays, a vector pair) and on the run-time argument ``q``, the same
  callback expression at every depth, before and after the nested call;
- a getter's scalar fed to a stencil (``c: float = self.halo.coefficient()``);
- stencils called through ``FrozenStencil`` and as plain gt4py objects with
  ``origin=``/``domain=`` (a region stencil, a FORWARD sweep);
- loops with a run-time count and run-time branches around any of these.

:func:`check` runs a program in ``Python`` mode and orchestrated (and, with
``run_mode``, loaded from the cache in ``Run`` mode) and names the arrays
that differ. The model binds a new array to a component's attribute between
calls, as models do. Used by ``tests/calls/test_random_callback_programs.py``
(a sample) and ``scripts/fuzz_programs.py --callbacks`` (hundreds).
"""

from __future__ import annotations

import dataclasses
import importlib.util
import random
import sys
import textwrap
from pathlib import Path
from typing import Any, Optional

import numpy as np

#: Arrays a component reads through ``self``, fixed at build time, by kind.
BUILD_TIME_2D = ('self.a2', 'self.fields["eta"]')
BUILD_TIME_3D = ('self.a3', 'self.b3', 'self.fields["temp"]', "self.view")
#: Fields a stencil may take (gt4py storages, not views).
STENCIL_FIELDS = ("q", "self.a3", "self.b3", 'self.fields["temp"]')


@dataclasses.dataclass(frozen=True)
class CallbackProgram:
    seed: int
    levels: int
    source: str

    @property
    def module_name(self) -> str:
        return f"random_callback_program_{self.seed}"


class _BodyWriter:
    def __init__(self, rng: random.Random, has_child: bool) -> None:
        self.rng, self.has_child = rng, has_child

    def statement(self, nested: bool) -> list[str]:
        r = self.rng
        kinds = ["fill", "fill", "fill_q", "pair", "smooth", "sweep", "coefficient"]
        if not nested:
            kinds += ["loop", "branch"]
        kind = r.choice(kinds)
        if kind == "fill":
            return [f"self.halo.fill({r.choice(BUILD_TIME_2D + BUILD_TIME_3D)})"]
        if kind == "fill_q":
            return ["self.halo.fill(q)"]
        if kind == "pair":
            pair = r.sample(BUILD_TIME_2D, 2) if r.random() < 0.5 else r.sample(("q",) + BUILD_TIME_3D[:3], 2)
            return [f"self.halo.fill_pair({pair[0]}, {pair[1]})"]
        if kind in ("smooth", "sweep", "coefficient"):
            source, target = r.sample(STENCIL_FIELDS, 2)
            if kind == "smooth":
                stencil = r.choice(("self.smooth", "self.plain_smooth"))
                extra = ", origin=ORIGIN, domain=DOMAIN" if stencil == "self.plain_smooth" else ""
                return [f"{stencil}({source}, {target}{extra})"]
            weight = "0.25" if kind == "sweep" else "c"
            lines = ["c: float = self.halo.coefficient()"] if kind == "coefficient" else []
            return lines + [f"self.plain_sweep({source}, {target}, {weight}, origin=ORIGIN, domain=DOMAIN)"]
        header = "for _ in range(n):" if kind == "loop" else "if flag:"
        body = [line for _ in range(r.randint(1, 2)) for line in self.statement(nested=True)]
        return [header] + ["    " + line for line in body]

    def body(self) -> list[str]:
        lines = [line for _ in range(self.rng.randint(2, 5)) for line in self.statement(nested=False)]
        if self.has_child:
            at = self.rng.randint(0, len(lines))
            while at < len(lines) and lines[at].startswith("    "):
                at += 1  # not inside a loop or branch body
            calls = ["self.child(q, n, flag)"] * (2 if self.rng.random() < 0.2 else 1)
            lines[at:at] = calls
        return lines


def generate(seed: int) -> CallbackProgram:
    """The program drawn from ``seed`` (the same seed always gives the same program)."""
    rng = random.Random(seed)
    levels = rng.randint(1, 4)
    components = []
    for level in range(levels):
        child = f"self.child = Component{level + 1}(config, halo, seed + 1)" if level + 1 < levels else ""
        body = _BodyWriter(rng, has_child=bool(child)).body()
        components.append(_COMPONENT.format(
            level=level, child=child, body=textwrap.indent("\n".join(body), " " * 8),
        ))
    return CallbackProgram(seed, levels, _MODULE.format(seed=seed, components="\n\n".join(components)))


_MODULE = '''"""Random callback program {seed} (tests/calls/random_callback_programs.py)."""

import numpy as np
import gt4py.storage as gt_storage

from orchestra import FrozenStencil, orchestrate
from tests.calls.callback_program_parts import plain_stencil, smooth, sweep

SHAPE = (8, 7, 3)
ORIGIN, DOMAIN = (1, 1, 0), (6, 5, 3)


def field(rng, backend):
    return gt_storage.from_array(rng.uniform(-1.0, 1.0, SHAPE), backend=backend)


{components}
'''

_COMPONENT = '''class Component{level}:
    def __init__(self, config, halo, seed):
        rng = np.random.default_rng(seed)
        backend = config.backend
        self.halo = halo
        self.a2 = rng.uniform(-1.0, 1.0, SHAPE[:2])
        self.a3, self.b3 = field(rng, backend), field(rng, backend)
        self.big = rng.uniform(-1.0, 1.0, (SHAPE[0] + 2, SHAPE[1] + 2, SHAPE[2]))
        self.view = self.big[1:-1, 1:-1, :]
        self.fields = {{"eta": rng.uniform(-1.0, 1.0, SHAPE[:2]), "temp": field(rng, backend)}}
        self.smooth = FrozenStencil(smooth, backend=backend, origin=ORIGIN, domain=DOMAIN)
        self.plain_smooth = plain_stencil(smooth, backend)  # a gt4py stencil object, compiled once for all programs
        self.plain_sweep = plain_stencil(sweep, backend)
        {child}
        orchestrate(obj=self, config=config)

    def __call__(self, q, n: int, flag: bool):
{body}
'''


def load(program: CallbackProgram, folder: Path) -> Any:
    """Import the program's module from ``folder`` (once per process)."""
    if program.module_name in sys.modules:
        return sys.modules[program.module_name]
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{program.module_name}.py"
    path.write_text(program.source)
    spec = importlib.util.spec_from_file_location(program.module_name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[program.module_name] = module
    spec.loader.exec_module(module)
    return module


def run(program: CallbackProgram, folder: Path, mode: str, cache_root: Optional[Path],
        backend: str = "dace:cpu") -> dict[str, np.ndarray]:
    """Three calls (run-time counts and branches varied, an attribute rebound between); every array after."""
    import gt4py.storage as gt_storage

    from orchestra import DaceConfig
    from tests.calls.callback_program_parts import Halo

    module = load(program, folder)
    config = DaceConfig(None, backend=backend, orchestration=mode, cache_root=cache_root, exit_after_build=False)
    halo = Halo()
    model = module.Component0(config, halo, program.seed)
    q = gt_storage.from_array(np.random.default_rng(program.seed).uniform(-1.0, 1.0, module.SHAPE), backend=backend)
    model(q, 2, True)
    model(q, 0, False)
    deepest = model
    while hasattr(deepest, "child"):
        deepest = deepest.child
    deepest.a2 = np.full(module.SHAPE[:2], 0.5)  # a new array where callbacks read it
    model(q, 1, True)
    results = {"q": np.array(q), "calls": np.array([halo.calls]), "factor": np.array([halo.factor])}
    component, path = model, "model"
    while component is not None:
        for name in ("a2", "a3", "b3", "big"):
            results[f"{path}.{name}"] = np.array(getattr(component, name))
        for key, value in component.fields.items():
            results[f"{path}.fields[{key!r}]"] = np.array(value)
        component, path = getattr(component, "child", None), f"{path}.child"
    return results


def differing(reference: dict[str, np.ndarray], other: dict[str, np.ndarray]) -> list[str]:
    """Names of the arrays that differ bit for bit."""
    return [name for name in reference
            if reference[name].shape != other[name].shape
            or not np.array_equal(np.ascontiguousarray(reference[name]).view(np.uint8),
                                  np.ascontiguousarray(other[name]).view(np.uint8))]


def check(seed: int, work: Path, run_mode: bool = False) -> dict[str, list[str]]:
    """Mode -> arrays differing from ``Python`` mode (``BuildAndRun``; ``Run`` from the cache with ``run_mode``)."""
    program = generate(seed)
    folder, cache = work / "programs", work / "cache" / str(seed)  # one cache per program: lookups stay small
    reference = run(program, folder, "Python", None)
    outcome = {"BuildAndRun": differing(reference, run(program, folder, "BuildAndRun", cache))}
    if run_mode:
        outcome["Run"] = differing(reference, run(program, folder, "Run", cache))
    return outcome
