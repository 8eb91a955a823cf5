"""Time the parse stage alone of the FV3-size benchmark's model, in this process.

The model is the one ``scripts/bench_fv3_build.py --work WORK`` wrote
(``WORK/model``); its gt4py cache (``WORK/gt_cache``) holds every stencil
lowered after that run, so the parse lowers nothing. The build is cut after
the parse (nothing optimized or compiled; orchestra's cache is a fresh
temporary folder). Prints the parse's wall time and the part of it spent in
``FrozenStencil.__sdfg__`` (the stencils' SDFGs: read, restated)::

    python scripts/parse_only.py WORK/model GT_CACHE [--save PARSED.sdfg]

To compare two checkouts, run each on its own copy of the gt4py cache, in
turn, several times (``PYTHONPATH=<other checkout> python scripts/parse_only.py ...``);
``--save`` writes the parsed program for :func:`orchestra.observe.program_text`.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import tempfile
import time
from typing import Any


class _ParseDone(Exception):
    """Raised after the parse: the rest of the build is not wanted."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", help="the folder holding fv3_bench_model.py")
    parser.add_argument("gt_cache", help="gt4py's cache (GT_CACHE_ROOT) with the model's stencils")
    parser.add_argument("--save", default=None, help="write the parsed program here")
    arguments = parser.parse_args()
    os.environ["GT_CACHE_ROOT"] = arguments.gt_cache
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    sys.path.insert(0, arguments.model)
    import orchestra.pipeline.build as build
    from bench_lib.fv3_measure import timed_stencil_sdfgs
    from orchestra import DaceConfig

    parse = build.parse
    spent: dict[str, Any] = {}

    def parse_then_stop(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        parsed = parse(*args, **kwargs)
        timed = spent["timed"]
        print(f"parse {time.perf_counter() - start:.2f} s, of which stencils' SDFGs {timed['seconds']:.2f} s "
              f"({timed['calls']} calls); load {os.getloadavg()[0]:.2f}", flush=True)
        if arguments.save:
            parsed.sdfg.save(arguments.save)
        spent["parsed"] = True
        raise _ParseDone

    build.parse = parse_then_stop
    model_module = importlib.import_module("fv3_bench_model")
    config = DaceConfig(backend="dace:cpu", orchestration="BuildAndRun", cache_root=tempfile.mkdtemp())
    state = model_module.State.random(0)
    model = model_module.AcousticDynamics(config, model_module.Grid(1), state)
    with timed_stencil_sdfgs() as timed:
        spent.update(timed=timed)
        try:
            model(state, 60.0)
        except Exception:  # orchestra reports the stop as a failed build
            if not spent.get("parsed"):
                raise


if __name__ == "__main__":
    main()
