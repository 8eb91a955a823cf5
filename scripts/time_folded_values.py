"""Time the per-call check of folded values on the dycore (orchestra/key/folded_values.py).

Builds (or loads) the orchestrated dycore on one rank, then times
``FoldedValues.changed()`` (what every call runs before the library), the
check after a call of a program with callbacks (orchestra/calls/mid_call_changes.py:
the folded values again and the arrays read through ``self``) and the whole
orchestrated step, and prints what the checks compare:

    python scripts/time_folded_values.py --size 24
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=24, help="cells per rank along x and y")
    parser.add_argument("--nz", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=20000)
    parser.add_argument("--cache-root", default=os.environ.get("ORCHESTRA_CACHE_DIR"))
    args = parser.parse_args(argv)

    from bench_lib import dycore

    from orchestra.key.folded_values import FoldedValues

    model = dycore.build_model("orchestrated", args.size, args.nz, dycore.communicator(), args.cache_root)
    model.dycore()
    program = model.dycore.__dict__["__orchestra_programs__"]["__call__"]
    values = FoldedValues.of(program.dace_program())
    start = time.perf_counter()
    for _ in range(args.repeats):
        values.changed()
    check = (time.perf_counter() - start) / args.repeats
    from orchestra.calls.mid_call_changes import report_mid_call_changes

    caller = program.fast_caller
    start = time.perf_counter()
    for _ in range(args.repeats):
        report_mid_call_changes(program.label, 0, values, caller)
    after = (time.perf_counter() - start) / args.repeats
    start = time.perf_counter()
    steps = 50
    for _ in range(steps):
        model.dycore()
    step = (time.perf_counter() - start) / steps
    identities = sum(1 for value in values.values if value.same.__name__ == "_identical")
    print(f"{len(values)} entries ({len(values) - identities} values, {identities} callees held by components)")
    print(f"check: {check * 1e6:.2f} us per call; step: {step * 1e3:.3f} ms ({100 * check / step:.2f} %)"
          f" at {args.size}x{args.size}x{args.nz}, load {os.getloadavg()[0]:.1f}")
    print(f"after the call (callbacks: {caller.has_callbacks}; {len(caller._closure_getters)} arrays through self): "
          f"{after * 1e6:.2f} us per call ({100 * after / step:.2f} % of a step)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
