"""Random stencil programs: Python mode against orchestrated, bit for bit.

:func:`generate` draws a program from a seed: a chain of small gt4py
stencils over a few fields, with callbacks in between. The stencils mix
what makes a whole-program schedule hard to get right:

- pointwise statements and horizontal offset reads up to the halo width;
- temporaries inside a stencil, read with offsets (gt4py computes them on an
  extended range);
- horizontal regions (edge rows and columns, a corner, the row next to an edge);
- ``FORWARD`` and ``BACKWARD`` sweeps reading the level below or above, and
  ``PARALLEL`` intervals reading another level;
- extended compute domains that write into the halo;
- fields written in place, written by one stencil and re-read (with offsets)
  by the next, an input passed twice (aliased reads), a model-owned field;
- callbacks between stencils (``dace_inhibitor``): a halo exchange that
  mutates a field in numpy, and a getter whose scalar feeds a stencil.

A program is a Python module (stencils + a model class) written to a folder
and imported, because gt4py and DaCe both read source code.
:func:`run_program` runs it in one orchestration mode and returns every field.
Values stay in [-1, 1] (weights of every sum add up to at most 1), so no
program overflows however long it is.

:func:`check_edit` checks an incremental build instead: the program drawn
into components, built whole, then one stencil edited and rebuilt with
``split_at=("edited",)``, against a cold build and ``Python`` mode.

Used by ``tests/fusion/test_random_programs.py`` and
``tests/fusion/test_incremental_random_programs.py`` (a few programs) and by
``scripts/fuzz_programs.py`` (hundreds, reproducers saved).
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

#: Regions a stencil may restrict a statement to (gt4py syntax).
REGIONS = (
    "region[I[0], :]",
    "region[I[-1], :]",
    "region[:, J[0]]",
    "region[:, J[-1]]",
    "region[I[0], J[0]], region[I[-1], J[-1]]",
    "region[:, J[0] + 1]",
    "region[I[0] - 1, :]",
)


@dataclasses.dataclass(frozen=True)
class Shape:
    """Compute points per direction and the halo width around them."""

    nx: int = 6
    ny: int = 5
    nz: int = 3
    halo: int = 2

    @property
    def array(self) -> tuple[int, int, int]:
        return (self.nx + 2 * self.halo, self.ny + 2 * self.halo, self.nz)


@dataclasses.dataclass(frozen=True)
class Program:
    """A generated program: its module source and what to call it with."""

    seed: int
    shape: Shape
    fields: tuple[str, ...]
    source: str
    variant: str = ""  #: e.g. ``_parts2``: the same seed drawn into components

    @property
    def module_name(self) -> str:
        return f"random_program_{self.seed}{self.variant}"

    def write(self, folder: Path) -> Path:
        """Save the module as ``folder/<module_name>.py``; returns its path."""
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{self.module_name}.py"
        path.write_text(self.source)
        return path


class _StencilWriter:
    """Writes one stencil definition; tracks how far its reads reach."""

    def __init__(self, rng: random.Random, name: str, fields: list[str], halo: int) -> None:
        self.rng, self.name, self.halo = rng, name, halo
        self.extension = 1 if rng.random() < 0.25 else 0  # the domain reaches into the halo
        self.reach = halo - self.extension  # largest offset an input may be read at
        n_in = rng.randint(1, min(3, len(fields) - 1))
        chosen = rng.sample(fields, n_in + rng.randint(1, 2))
        self.inputs, self.outputs = chosen[:n_in], chosen[n_in:]
        self.scalar = rng.random() < 0.3
        self.lines: list[str] = []
        self.written: list[str] = []

    # ---------------------------------------------------------------- expressions
    def _offset(self, limit: int) -> str:
        i, j = (self.rng.randint(-limit, limit) for _ in range(2))
        return f"[{i}, {j}, 0]"

    def _term(self, sources: list[str], offsets: bool, limit: int, name: Optional[str] = None) -> str:
        name = name or self.rng.choice(sources)
        read = f"{name}{self._offset(limit)}" if offsets and name in self.inputs else name
        if self.rng.random() < 0.2:
            other = self.rng.choice(sources)
            read = f"{read} * {other}"
        return read

    def expression(self, sources: list[str], limit: Optional[int] = None, use_all: bool = False) -> str:
        """A weighted sum of reads whose weights add up to at most 1.

        ``use_all``: read every input (and the scalar) at least once. gt4py
        drops unused parameters from a stencil's SDFG, which orchestration
        does not handle yet (a separate bug, see docs/performance_log.md).
        """
        limit = self.reach if limit is None else limit
        required = list(self.inputs) if use_all else []
        n = max(self.rng.randint(1, 3), len(required))
        names = required + [None] * (n - len(required))
        weights = [self.rng.choice((0.5, 0.25, -0.25, 0.125, 0.375)) for _ in range(n)]
        scale = sum(abs(w) for w in weights)
        terms = [
            f"{w / scale if scale > 1 else w!r} * {self._term(sources, True, limit, name)}"
            for w, name in zip(weights, names)
        ]
        if self.scalar and (use_all or self.rng.random() < 0.5):
            terms[0] = f"{terms[0]} * c"
        return " + ".join(terms)

    # ---------------------------------------------------------------- bodies
    def parallel(self) -> None:
        temporaries: list[str] = []
        if self.reach >= 1 and self.rng.random() < 0.5:  # a temporary read with offsets
            temporaries.append("tmp")
        split_k = self.rng.random() < 0.3
        interval = "interval(1, None)" if split_k else "interval(...)"
        if split_k:
            out = self.outputs[0]
            self._block("PARALLEL", "interval(0, 1)", [f"{out} = {self.expression(self.inputs, use_all=True)}"])
        body = []
        if temporaries:
            body.append(f"tmp = {self.expression(self.inputs, limit=self.reach - 1)}")
        for index, out in enumerate(self.outputs):
            sources = self.inputs + self.written + ([out] if self.rng.random() < 0.4 else [])
            limit = self.reach - 1 if temporaries else None
            expr = self.expression(sources, limit=limit, use_all=index == 0 and not split_k)
            if temporaries:
                expr = f"0.5 * ({expr}) + 0.5 * tmp{self._offset(1)}"
            if split_k and index == 0:
                k_input = self.rng.choice(self.inputs)
                expr = f"0.5 * ({expr}) + 0.5 * {k_input}[0, 0, -1]"
            body.append(f"{out} = {expr}")
            if self.rng.random() < 0.4:
                region = self.rng.choice(REGIONS)
                body.append(f"with horizontal({region}):")
                body.append(f"    {out} = {self.expression(self.inputs + [out])}")
            self.written.append(out)
        self._block("PARALLEL", interval, body)

    def sweep(self, direction: str) -> None:
        first, rest, neighbour = (
            ("interval(0, 1)", "interval(1, None)", "[0, 0, -1]")
            if direction == "FORWARD"
            else ("interval(-1, None)", "interval(0, -1)", "[0, 0, 1]")
        )
        out = self.outputs[0]
        lines = [f"with {first}:", f"    {out} = {self.expression(self.inputs, use_all=True)}"]
        lines += [f"with {rest}:", f"    {out} = 0.5 * {out}{neighbour} + 0.5 * ({self.expression(self.inputs)})"]
        if self.rng.random() < 0.3:
            lines += [f"    with horizontal({self.rng.choice(REGIONS)}):", f"        {out} = {self.expression(self.inputs)}"]
        self.lines.append(f"    with computation({direction}):")
        self.lines += ["        " + line for line in lines]
        self.written.append(out)
        for extra in self.outputs[1:]:  # later outputs: pointwise, re-reading the swept field
            self._block("PARALLEL", "interval(...)", [f"{extra} = {self.expression(self.inputs + [out])}"])
            self.written.append(extra)

    def _block(self, order: str, interval: str, body: list[str]) -> None:
        self.lines.append(f"    with computation({order}), {interval}:")
        self.lines += ["        " + line for line in body]

    def source(self) -> str:
        kind = self.rng.choices(("PARALLEL", "FORWARD", "BACKWARD"), weights=(4, 1, 1))[0]
        if kind == "PARALLEL":
            self.parallel()
        else:
            self.sweep(kind)
        params = [f"{name}: FloatField" for name in self.inputs + self.outputs]
        if self.scalar:
            params.append("c: float")
        return f"def {self.name}({', '.join(params)}):\n" + "\n".join(self.lines) + "\n"


def generate(
    seed: int, shape: Shape = Shape(), n_fields: int = 4, n_stencils: int = 4, components: int = 0,
    edited: Optional[int] = None,
) -> Program:
    """The program drawn from ``seed`` (the same seed always gives the same program).

    ``components``: the stencils (with the callbacks after them) go, in
    order, into that many orchestrated components, which the model calls in
    turn; each holds an alias of the model's scratch field. ``edited``: the
    stencil of that index halves its first output at its end (an edit of one
    stencil's code; every other line of the module, and every draw, stays).
    """
    rng = random.Random(seed)
    fields = [f"f{i}" for i in range(n_fields)]
    pool = fields + ["self.scratch"]
    definitions, constructors, calls = [], [], []
    per_stencil: list[tuple[str, list[str]]] = []  # (constructor, calls) of each stencil
    for index in range(n_stencils):
        name = f"stencil_{index}"
        params = [p.replace("self.", "") for p in pool]
        writer = _StencilWriter(rng, name, params, shape.halo)
        definition = writer.source()
        if index == edited:
            out = writer.outputs[0]
            definition += f"    with computation(PARALLEL), interval(...):\n        {out} = 0.5 * {out}\n"
        definitions.append(definition)
        first_call = len(calls)
        e = writer.extension
        origin = (shape.halo - e, shape.halo - e, 0)
        domain = (shape.nx + 2 * e, shape.ny + 2 * e, shape.nz)
        constructors.append(
            f"self.{name} = FrozenStencil({name}, backend=backend, origin={origin}, domain={domain})"
        )
        arguments = [_argument(p) for p in writer.inputs + writer.outputs]
        if len(writer.inputs) > 1 and rng.random() < 0.2:  # aliased reads: one array for two inputs
            arguments[1] = arguments[0]
        if writer.scalar:
            arguments.append("c")
        calls.append(f"self.{name}({', '.join(arguments)})")
        roll = rng.random()
        if roll < 0.3:
            calls.append(f"self.exchange({_argument(rng.choice(writer.outputs))})")
        elif roll < 0.45:
            calls.append("c: float = self.coefficient()")
        per_stencil.append((constructors[-1], calls[first_call:]))
    variant = ""
    if components:
        definitions += [_component(index, part, fields) for index, part in enumerate(_chunks(per_stencil, components))]
        constructors = [f"self.part_{index} = Part{index}(self, config)" for index in range(components)]
        calls = [f"self.part_{index}({', '.join(fields)})" for index in range(components)]
        variant = f"_parts{components}"
    body = ["c: float = self.coefficient()"] + calls
    source = _MODULE.format(
        seed=seed,
        definitions="\n\n".join(definitions),
        constructors=textwrap.indent("\n".join(constructors), " " * 8),
        fields=", ".join(fields),
        body=textwrap.indent("\n".join(body), " " * 8),
        halo=shape.halo,
        exchange=EXCHANGE,
    )
    return Program(seed, shape, tuple(fields), source, variant)


def _chunks(items: list, count: int) -> list[list]:
    """``items`` in ``count`` consecutive runs, as even as can be (none empty if there are enough items)."""
    size, extra = divmod(len(items), count)
    bounds = [index * size + min(index, extra) for index in range(count + 1)]
    return [items[start:end] for start, end in zip(bounds, bounds[1:])]


def _component(index: int, part: list[tuple[str, list[str]]], fields: list[str]) -> str:
    """The source of component ``Part<index>``: its stencils and their calls, callbacks through the model."""
    return _COMPONENT.format(
        index=index,
        constructors=textwrap.indent("\n".join(constructor for constructor, _ in part), " " * 8),
        fields=", ".join(fields),
        body=textwrap.indent("\n".join(["c: float = self.coefficient()"] + [c for _, cs in part for c in cs]), " " * 8),
    )


_COMPONENT = '''class Part{index}:
    def __init__(self, owner, config):
        backend = config.backend
        self.owner = owner
        self.scratch = owner.scratch  # an alias of the model's field
{constructors}
        orchestrate(obj=self, config=config)

    @dace_inhibitor
    def exchange(self, q):
        self.owner.exchange(q)

    @dace_inhibitor
    def coefficient(self) -> float:
        return self.owner.coefficient()

    def __call__(self, {fields}):
{body}
'''


def _argument(name: str) -> str:
    return "self.scratch" if name == "scratch" else name


_MODULE = '''"""Random program {seed} (tests/fusion/random_programs.py)."""

import numpy as np
from gt4py.cartesian.gtscript import BACKWARD, FORWARD, PARALLEL, Field, I, J, computation, horizontal, interval, region

from orchestra import FrozenStencil, dace_inhibitor, orchestrate

FloatField = Field[np.float64]
HALO = {halo}


{definitions}

class RandomProgram:
    def __init__(self, config, shape):
        import gt4py.storage as gt_storage

        backend = config.backend
        self.scratch = gt_storage.zeros(shape, np.float64, backend=backend)
        self.factor = 0.75
        self.exchanges = 0
{constructors}
        orchestrate(obj=self, config=config)

{exchange}
    @dace_inhibitor
    def coefficient(self) -> float:
        self.factor = -0.5 * self.factor
        return self.factor

    def __call__(self, {fields}):
{body}
'''


#: The model's halo exchange (a callback that fills the halo periodically, in numpy), in every generated module.
EXCHANGE = '''    @dace_inhibitor
    def exchange(self, q):
        h = HALO
        q[:h, :, :] = q[-2 * h : -h, :, :]
        q[-h:, :, :] = q[h : 2 * h, :, :]
        q[:, :h, :] = q[:, -2 * h : -h, :]
        q[:, -h:, :] = q[:, h : 2 * h, :]
        self.exchanges += 1
'''


def load_module(program: Program, folder: Path, fresh: bool = False) -> Any:
    """Import the program's module from ``folder`` (once per process; ``fresh``: write and import it again).

    ``fresh`` replaces a module of the same name, as a developer's edit of
    the file does between two runs.
    """
    if program.module_name in sys.modules and not fresh:
        return sys.modules[program.module_name]
    path = program.write(folder)
    spec = importlib.util.spec_from_file_location(program.module_name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[program.module_name] = module
    spec.loader.exec_module(module)
    return module


def initial_fields(program: Program, backend: str) -> list[Any]:
    """The program's argument fields, random in [-1, 1] (drawn from its seed)."""
    import gt4py.storage as gt_storage

    rng = np.random.default_rng(program.seed)
    return [
        gt_storage.from_array(rng.uniform(-1.0, 1.0, program.shape.array), backend=backend)
        for _ in program.fields
    ]


def run_program(program: Program, folder: Path, config: Any, calls: int = 2) -> dict[str, np.ndarray]:
    """Run ``program`` ``calls`` times under ``config``; every field (and the scratch) after."""
    module = load_module(program, folder)
    model = module.RandomProgram(config, program.shape.array)
    fields = initial_fields(program, config.backend)
    for _ in range(calls):
        model(*fields)
    results = {name: np.asarray(field).copy() for name, field in zip(program.fields, fields)}
    results["scratch"] = np.asarray(model.scratch).copy()
    results["exchanges"] = np.array([model.exchanges])
    return results


def differences(reference: dict[str, np.ndarray], other: dict[str, np.ndarray]) -> list[str]:
    """Names of the fields that differ bit for bit (NaNs at the same places count as equal)."""
    return [
        name
        for name in reference
        if reference[name].shape != other[name].shape
        or not np.array_equal(reference[name].view(np.uint8), other[name].view(np.uint8))
    ]


def _config(mode: str, cache_root: Path, backend: str = "dace:cpu", **options: Any) -> Any:
    """The ``DaceConfig`` of one run: one process, ``backend``, builds in ``cache_root``, no exit after a build."""
    from orchestra import DaceConfig

    return DaceConfig(None, backend=backend, orchestration=mode, cache_root=cache_root, exit_after_build=False,
                      **options)


@dataclasses.dataclass(frozen=True)
class Outcome:
    """How one program fared: per variant, the differing fields or the error."""

    seed: int
    differing: dict[str, list[str]]
    errors: dict[str, str]

    @property
    def ok(self) -> bool:
        return not self.errors and not any(self.differing.values())


def check_program(
    program: Program,
    folder: Path,
    cache_root: Path,
    variants: dict[str, dict[str, Any]],
    reference_backend: str = "dace:cpu",
) -> Outcome:
    """Run ``program`` in Python mode and orchestrated once per variant (name -> ``DaceConfig`` options).

    ``reference_backend`` runs Python mode: ``dace:cpu`` is the same backend
    stencil by stencil (one build per stencil); ``numpy`` builds in a second.
    """
    reference = run_program(program, folder, _config("Python", cache_root, reference_backend))
    differing, errors = {}, {}
    for name, options in variants.items():
        config = _config("BuildAndRun", cache_root, **options)
        try:
            differing[name] = differences(reference, run_program(program, folder, config))
        except Exception as error:  # noqa: BLE001 (a failed build is an outcome to report)
            errors[name] = f"{type(error).__name__}: {error}"
    return Outcome(program.seed, differing, errors)


@dataclasses.dataclass(frozen=True)
class EditOutcome:
    """An incremental build after an edit: what differs from ``Python`` mode, and what the edit rebuilt."""

    seed: int
    edited: int  #: the index of the edited stencil
    differing: dict[str, list[str]]  #: ``cold`` and ``incremental`` -> fields differing from Python mode
    split_programs: list[str]  #: the programs the incremental build made (its cache folders)
    changed: bool  #: the edit changed the fields (else the check would prove nothing)

    @property
    def ok(self) -> bool:
        return self.changed and bool(self.split_programs) and not any(self.differing.values())


def check_edit(
    seed: int, work: Path, shape: Shape = Shape(), n_fields: int = 4, n_stencils: int = 4, components: int = 2,
) -> EditOutcome:
    """Build the program of ``seed`` in ``components`` whole, edit a stencil drawn from the seed, rebuild it split.

    The edited model runs with ``split_at=("edited",)`` on the whole build's
    cache (``work/cache``), then as a cold whole build (``work/cold``) and in
    ``Python`` mode (``dace:cpu``); both builds are compared with Python mode.
    """
    edited = random.Random(seed).randrange(n_stencils)
    program = generate(seed, shape, n_fields, n_stencils, components=components)
    changed = generate(seed, shape, n_fields, n_stencils, components=components, edited=edited)
    folder, cache = work / "programs", work / "cache"
    load_module(program, folder, fresh=True)
    before = run_program(program, folder, _config("BuildAndRun", cache))
    programs = {path.name for path in cache.iterdir()}
    load_module(changed, folder, fresh=True)  # the developer's edit: the same module, one stencil changed
    incremental = run_program(changed, folder, _config("BuildAndRun", cache, split_at=("edited",)))
    split_programs = sorted(path.name for path in cache.iterdir() if path.name not in programs)
    cold = run_program(changed, folder, _config("BuildAndRun", work / "cold"))
    python = run_program(changed, folder, _config("Python", work / "python"))
    return EditOutcome(
        seed, edited, {"cold": differences(python, cold), "incremental": differences(python, incremental)},
        split_programs, differences(before, incremental) != [],
    )
