"""Random programs over scratch arrays: every model-visible field bitwise equal to ``Python`` mode.

:func:`generate` draws, from a seed, a model holding two ``orchestra.Scratch``
arrays and a call sequence that keeps the scratch contract (a scratch array
is written, over the compute domain and one halo ring, before the call reads
it) but otherwise mixes what the scratch-plane pass must get right: several
rounds of write and read on one array, reads at horizontal offsets, a read of
the level below (no plane), a ``FORWARD`` sweep writing one (not a map over
``k``), and a callback between a write and a read (two states). The fields
(never the scratch arrays, which hold nothing Python may read) are compared
bit for bit with :func:`tests.fusion.random_programs.differences`.
"""

from __future__ import annotations

import random

from tests.fusion.random_programs import EXCHANGE, Program, Shape

N_FIELDS = 3
SCRATCH = ("s0", "s1")


def generate(seed: int, shape: Shape = Shape(), n_calls: int = 7) -> Program:
    """The program drawn from ``seed``: ``n_calls`` stencil calls and callbacks over two scratch arrays."""
    rng = random.Random(seed)
    fields = [f"f{index}" for index in range(N_FIELDS)]
    written: set[str] = set()  # scratch arrays this call has written
    definitions, constructors, calls = [], [], []
    h = shape.halo
    extended = ((h - 1, h - 1, 0), (shape.nx + 2, shape.ny + 2, shape.nz))
    compute = ((h, h, 0), (shape.nx, shape.ny, shape.nz))
    for index in range(n_calls):
        kinds = ["make", "sweep"] + (["use", "use", "below", "exchange"] if written else [])
        kind = rng.choice(kinds)
        name = f"{kind}_{index}"
        scratch = rng.choice(sorted(written)) if kind in ("use", "below") else rng.choice(SCRATCH)
        a, b = rng.sample(fields, 2)
        if kind == "exchange":
            calls.append(f"self.exchange({a})")
            continue
        source, arguments, (origin, domain) = _stencil(rng, kind, name, scratch, a, b, extended, compute)
        definitions.append(source)
        constructors.append(f"self.{name} = FrozenStencil({name}, backend=backend, origin={origin}, domain={domain})")
        calls.append(f"self.{name}({', '.join(arguments)})")
        if kind in ("make", "sweep"):
            written.add(scratch)
    source = _MODULE.format(
        seed=seed, halo=h, definitions="\n\n".join(definitions), fields=", ".join(fields),
        constructors="\n".join(" " * 8 + line for line in constructors),
        body="\n".join(" " * 8 + line for line in calls), exchange=EXCHANGE,
    )
    return Program(seed, shape, tuple(fields), source, "_scratch")


def _stencil(rng: random.Random, kind: str, name: str, scratch: str, a: str, b: str, extended: tuple,
             compute: tuple) -> tuple[str, list[str], tuple]:
    """(definition, call arguments, (origin, domain)) of one stencil call."""
    di, dj = rng.randint(-1, 1), rng.randint(-1, 1)
    w = rng.choice((0.25, 0.5, 0.375))
    target = f"self.{scratch}"
    if kind == "make":  # writes the scratch array on the compute domain and one halo ring
        body = f"    with computation(PARALLEL), interval(...):\n        s = {w} * a[{di}, {dj}, 0] + {1 - w} * b"
        return f"def {name}(a: F, b: F, s: F):\n{body}\n", [a, b, target], extended
    if kind == "sweep":  # writes it level by level, reading the level below
        body = (f"    with computation(FORWARD):\n        with interval(0, 1):\n            s = a\n"
                f"        with interval(1, None):\n            s = {w} * s[0, 0, -1] + {1 - w} * a")
        return f"def {name}(a: F, s: F):\n{body}\n", [a, target], extended
    if kind == "use":  # reads it at an offset into a field, in place
        body = (f"    with computation(PARALLEL), interval(...):\n"
                f"        out = {w} * out + {(1 - w) / 2} * s[{di}, {dj}, 0] + {(1 - w) / 2} * a")
        return f"def {name}(s: F, a: F, out: F):\n{body}\n", [target, a, b], compute
    body = f"    with computation(PARALLEL), interval(1, None):\n        out = {w} * out + {1 - w} * s[0, 0, -1]"
    return f"def {name}(s: F, out: F):\n{body}\n", [target, b], compute  # "below": the level below


_MODULE = '''"""Random scratch program {seed} (tests/fusion/scratch_programs.py)."""

import numpy as np
from gt4py.cartesian.gtscript import FORWARD, PARALLEL, Field, computation, interval

from orchestra import FrozenStencil, Scratch, dace_inhibitor, orchestrate

F = Field[np.float64]
HALO = {halo}


{definitions}

class RandomProgram:
    def __init__(self, config, shape):
        import gt4py.storage as gt_storage

        backend = config.backend
        self.s0 = Scratch(gt_storage.zeros(shape, np.float64, backend=backend))
        self.s1 = Scratch(gt_storage.zeros(shape, np.float64, backend=backend))
        self.scratch = gt_storage.zeros(shape, np.float64, backend=backend)  # (what run_program reports)
        self.exchanges = 0
{constructors}
        orchestrate(obj=self, config=config)

{exchange}
    def __call__(self, {fields}):
{body}
'''
