"""Bytes per stencil: the kernel profile's count (from the SDFG) against the benchmark's traffic model.

Reads a kernel profile written by the driver (``ORCHESTRA_PROFILE=kernels
scripts/run.sh`` writes ``<output>/<config>_kernels.json``; rerun with
``--sdfg`` to recount from a build's ``program.sdfgz``) and traces one step
of a Python-mode dycore with the same per-rank size
(``scripts/bench_lib/traffic.py``), then prints both per stencil::

    python scripts/compare_kernel_traffic.py output/c24_case2_run1/c24_case2_kernels.json --size 24 --nz 1
    python scripts/compare_kernel_traffic.py --sdfg .orchestra_cache/DynamicalCore.__call__/<key>/program.sdfgz
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("profile", nargs="?", help="a <config>_kernels.json")
    parser.add_argument("--sdfg", help="count from this program.sdfgz instead")
    parser.add_argument("--size", type=int, default=24, help="cells per rank along x and y")
    parser.add_argument("--nz", type=int, default=1)
    args = parser.parse_args(argv)
    if bool(args.profile) == bool(args.sdfg):
        parser.error("give a kernel profile or --sdfg")

    from bench_lib import dycore, traffic

    if args.sdfg:
        import dace

        from orchestra.passes.kernel_timers import kernel_traffic

        counted: collections.Counter[str] = collections.Counter()
        for kernel in kernel_traffic(dace.SDFG.from_file(args.sdfg)).values():
            counted[kernel["stencil"]] += kernel["bytes"]
    else:
        stencils = json.loads(Path(args.profile).read_text())["DynamicalCore.__call__"]["stencils"]
        counted = collections.Counter({name: figures["bytes"] for name, figures in stencils.items()})
    model = dycore.build_model("numpy", args.size, args.nz, dycore.communicator(), None)
    modelled: collections.Counter[str] = collections.Counter()
    for segment in traffic.trace_step(model).segments:
        for name, accesses in segment:
            modelled[name] += 8 * sum(a.read_cells * a.read + a.write_cells * a.write for a in accesses)
    print(f"{'stencil':<26}{'traffic model':>14}{'kernel profile':>16}")
    for name in sorted(modelled, key=lambda n: -modelled[n]):
        print(f"{name:<26}{modelled[name]:>14}{counted.get(name, 0):>16}")
    print(f"{'total':<26}{sum(modelled.values()):>14}{sum(counted.values()):>16}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
