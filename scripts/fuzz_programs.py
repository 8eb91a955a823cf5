"""Run random stencil programs in Python mode and orchestrated; save any that differ.

Each program (``tests/fusion/random_programs.py``) is drawn from a seed, run
in ``Python`` mode, then orchestrated once per variant (the default CPU
passes, and the same with the fusion passes), and compared bit for bit.
A program whose results differ, or whose orchestrated build fails, is saved
as a reproducer: its module source and a JSON record of what went wrong::

    python scripts/fuzz_programs.py --count 200 --seed 1000 --out fuzz_reproducers
    python scripts/fuzz_programs.py --seeds 1017 --reference dace:cpu   # one program again

``--edits`` checks incremental builds instead: each program drawn into
``--components`` orchestrated components is built whole, one stencil (drawn
from the seed) is edited, and the edited model is rebuilt with
``split_at=("edited",)`` and compared with a cold build and ``Python`` mode
(``dace:cpu``); a failing seed is saved edited.

``--scratch`` draws programs over two ``orchestra.Scratch`` arrays instead
(``tests/fusion/scratch_programs.py``: the scratch contract kept, write and
read rounds, a read of the level below, sweeps, callbacks in between); the
fields are compared, never the scratch arrays.

``--callbacks`` draws programs of 1-4 nested components sharing callbacks
instead (``tests/calls/random_callback_programs.py``: build-time and run-time
callback arguments, the same callback at every depth, loops with run-time
counts, branches, FrozenStencil and plain gt4py stencils, an attribute
rebound between calls), each run in ``Python`` mode, ``BuildAndRun`` and
``Run`` from the cache::

    python scripts/fuzz_programs.py --callbacks --count 300

The exit status is 1 if any program failed. ``--reference dace:cpu``
(default) runs Python mode exactly as a model does stencil by stencil (one
library per stencil: about 20 s per stencil on a loaded machine);
``--reference numpy`` builds in a second but is only a screen: gt4py's
numpy backend is not bitwise equal to ``dace:cpu`` everywhere (seeds 4 and
7 differ in halo points under numpy and agree under ``dace:cpu``), so
confirm a numpy difference with ``--seeds N --reference dace:cpu``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.calls.random_callback_programs import check as check_callbacks  # noqa: E402
from tests.calls.random_callback_programs import generate as generate_callbacks  # noqa: E402
from tests.fusion.random_programs import Shape, check_edit, check_program, generate  # noqa: E402
from tests.fusion.scratch_programs import generate as generate_scratch  # noqa: E402
from tests.fusion.variants import VARIANTS  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seed", type=int, default=0, help="first seed")
    parser.add_argument("--count", type=int, default=20, help="programs to run")
    parser.add_argument("--seeds", type=int, nargs="*", help="exactly these seeds (overrides --seed/--count)")
    parser.add_argument("--stencils", type=int, default=4, help="stencils per program")
    parser.add_argument("--fields", type=int, default=4, help="argument fields per program")
    parser.add_argument("--halo", type=int, default=2, help="halo width (largest offset read)")
    parser.add_argument("--reference", default="dace:cpu", choices=("numpy", "dace:cpu"), help="Python-mode backend")
    parser.add_argument("--variants", nargs="*", default=sorted(VARIANTS), choices=sorted(VARIANTS))
    parser.add_argument("--out", type=Path, default=Path("fuzz_reproducers"), help="where reproducers go")
    parser.add_argument("--cache-root", type=Path, default=None, help="orchestra cache (default: a temporary one)")
    parser.add_argument("--edits", action="store_true", help="check incremental builds after an edit instead")
    parser.add_argument("--components", type=int, default=2, help="components per program (with --edits)")
    parser.add_argument("--scratch", action="store_true",
                        help="programs over orchestra.Scratch arrays instead (tests/fusion/scratch_programs.py)")
    parser.add_argument("--callbacks", action="store_true",
                        help="programs of nested components and callbacks instead "
                             "(tests/calls/random_callback_programs.py), also run in Run mode from the cache")
    args = parser.parse_args()
    if args.edits:
        return _check_edits(args)
    if args.callbacks:
        return _check_callbacks(args)

    seeds = args.seeds if args.seeds else range(args.seed, args.seed + args.count)
    shape = Shape(halo=args.halo)
    variants = {name: VARIANTS[name] for name in args.variants}
    work = Path(tempfile.mkdtemp(prefix="fuzz_programs_"))
    cache_root = args.cache_root or work / "cache"
    failed = []
    for seed in seeds:
        if args.scratch:
            program = generate_scratch(seed, shape, n_calls=args.stencils + 3)
        else:
            program = generate(seed, shape, n_fields=args.fields, n_stencils=args.stencils)
        start = time.perf_counter()
        try:
            outcome = check_program(program, work / "programs", cache_root, variants, args.reference)
        except Exception as error:  # noqa: BLE001 (the reference itself failed: a generator bug)
            print(f"seed {seed}: Python mode failed ({type(error).__name__}: {error})", flush=True)
            _save(args.out, program, {"seed": seed, "reference_error": str(error)})
            failed.append(seed)
            continue
        status = "equal" if outcome.ok else f"DIFFERS {outcome.differing} {outcome.errors}"
        print(f"seed {seed}: {status} ({time.perf_counter() - start:.1f} s)", flush=True)
        if not outcome.ok:
            record = {"seed": seed, "reference": args.reference, "differing": outcome.differing,
                      "errors": outcome.errors, "shape": list(shape.array)}
            _save(args.out, program, record)
            failed.append(seed)
    print(f"{len(failed)} of {len(list(seeds))} programs failed" + (f": seeds {failed}, saved in {args.out}" if failed else ""))
    return 1 if failed else 0


def _check_edits(args: argparse.Namespace) -> int:
    """``--edits``: each seed built whole, edited, rebuilt split; compared with a cold build and Python mode."""
    seeds = args.seeds if args.seeds else range(args.seed, args.seed + args.count)
    shape = Shape(halo=args.halo)
    failed = []
    for seed in seeds:
        start = time.perf_counter()
        try:
            outcome = check_edit(seed, Path(tempfile.mkdtemp(prefix=f"fuzz_edit_{seed}_")), shape, args.fields,
                                 args.stencils, args.components)
            status = "equal" if outcome.ok else f"FAILED {outcome}"
        except Exception as error:  # noqa: BLE001 (a failed build is an outcome to report)
            outcome, status = None, f"FAILED ({type(error).__name__}: {error})"
        print(f"seed {seed}: {status} ({time.perf_counter() - start:.1f} s)", flush=True)
        if outcome is None or not outcome.ok:
            edited = outcome.edited if outcome is not None else None
            program = generate(seed, shape, args.fields, args.stencils, components=args.components, edited=edited)
            _save(args.out, program, {"seed": seed, "edited": edited, "outcome": status})
            failed.append(seed)
    print(f"{len(failed)} of {len(list(seeds))} edits failed" + (f": seeds {failed}, saved in {args.out}" if failed else ""))
    return 1 if failed else 0


def _check_callbacks(args: argparse.Namespace) -> int:
    """``--callbacks``: each seed in Python mode, BuildAndRun and Run (from the cache), compared bit for bit."""
    seeds = args.seeds if args.seeds else range(args.seed, args.seed + args.count)
    work = Path(tempfile.mkdtemp(prefix="fuzz_callbacks_"))
    failed = []
    for seed in seeds:
        start = time.perf_counter()
        try:
            outcome = check_callbacks(seed, work, run_mode=True)
            status = "equal" if not any(outcome.values()) else f"DIFFERS {outcome}"
        except Exception as error:  # noqa: BLE001 (a failed build is an outcome to report)
            status = f"FAILED ({type(error).__name__}: {error})"
        print(f"seed {seed}: {status} ({time.perf_counter() - start:.1f} s)", flush=True)
        if status != "equal":
            program = generate_callbacks(seed)
            args.out.mkdir(parents=True, exist_ok=True)
            (args.out / f"{program.module_name}.py").write_text(program.source)
            (args.out / f"{program.module_name}.json").write_text(json.dumps({"seed": seed, "outcome": status}) + "\n")
            failed.append(seed)
    print(f"{len(failed)} of {len(list(seeds))} programs failed" + (f": seeds {failed}, saved in {args.out}" if failed else ""))
    return 1 if failed else 0


def _save(folder: Path, program, record: dict) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    program.write(folder)
    (folder / f"{program.module_name}.json").write_text(json.dumps(record, indent=2) + "\n")


if __name__ == "__main__":
    sys.exit(main())
