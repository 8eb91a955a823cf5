"""Lowering the FV3 benchmark's stencils with and without orchestra's exact shortcuts: time and SDFGs compared.

Usage::

    python scripts/time_lowering.py [--stencils 12] [--rounds 2]

Writes the benchmark's model module (``bench_lib/fv3_model.py``, its first
``--stencils`` stencils: every family of FV3's kind) to a temporary folder,
then lowers each stencil (:meth:`orchestra.FrozenStencil.lower_ahead`) in a
fresh process with an empty gt4py cache, alternating ``off`` (DaCe's own
trivial-condition test, :mod:`orchestra.toolchain.trivial_conditions` not
installed) and ``on``, ``--rounds`` times each. Prints each process's
lowering time and the load, and whether the frozen SDFGs the two settings
wrote are identical (their JSON, DaCe's ids and hash and object ids in symbol names aside;
children run with ``PYTHONHASHSEED=0``).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent

_CHILD = r"""
import sys, time, importlib, contextlib
sys.path.insert(0, sys.argv[1])
setting = sys.argv[2]
if setting == "off":
    import orchestra.toolchain.trivial_conditions as conditions
    conditions.one_evaluation_per_condition = contextlib.nullcontext
    import orchestra.toolchain.shortcuts as shortcuts
    shortcuts.one_evaluation_per_condition = contextlib.nullcontext
import re
import fv3_bench_model as model
from orchestra import FrozenStencil
made = re.findall(r"FrozenStencil\((\w+), .*externals=(\{[^}]*\})\)", open(model.__file__).read())
made.sort(key=lambda found: int(found[0].rsplit("_", 1)[1]))
stencils = [FrozenStencil(getattr(model, name), backend="dace:cpu", origin=model.ORIGIN, domain=model.DOMAIN,
                          externals=eval(externals)) for name, externals in made[: int(sys.argv[3])]]
start = time.perf_counter()
for stencil in stencils:
    stencil.lower_ahead()
print(f"{time.perf_counter() - start:.2f}")
"""


def _frozen_sdfgs(cache: Path) -> dict[str, str]:
    from orchestra.observe.program_text import program_text

    found = {}
    for path in sorted(cache.rglob("*.sdfgz")):
        with gzip.open(path, "rt") as handle:
            found[path.name] = program_text(json.load(handle))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--stencils", type=int, default=12)
    parser.add_argument("--rounds", type=int, default=2)
    arguments = parser.parse_args()
    sys.path.insert(0, str(HERE))
    from bench_lib.fv3_model import model_source

    with tempfile.TemporaryDirectory(prefix="time_lowering_") as scratch:
        folder = Path(scratch)
        (folder / "fv3_bench_model.py").write_text(model_source(324))
        written: dict[str, dict[str, str]] = {}
        for round_ in range(arguments.rounds):
            for setting in ("off", "on") if round_ % 2 == 0 else ("on", "off"):
                cache = folder / f"gt_{setting}_{round_}"
                environment = dict(os.environ, GT_CACHE_ROOT=str(cache), OMP_NUM_THREADS="1", PYTHONHASHSEED="0")
                load = os.getloadavg()[0]
                done = subprocess.run([sys.executable, "-c", _CHILD, str(folder), setting, str(arguments.stencils)],
                                      env=environment, capture_output=True, text=True, check=True)
                seconds = float(done.stdout.strip().splitlines()[-1])
                print(f"{setting}: {arguments.stencils} stencils lowered in {seconds:.2f} s "
                      f"(load {load:.1f} -> {os.getloadavg()[0]:.1f})", flush=True)
                written[f"{setting}{round_}"] = _frozen_sdfgs(cache)
        _compare(written)


def _compare(written: dict[str, dict[str, str]]) -> None:
    """Each SDFG file as ``off`` wrote it in any round against ``on``'s; gt4py's own variation between rounds shown."""
    files = sorted(written["off0"])
    variants = {file: {setting: {found[file] for name, found in written.items() if name.startswith(setting)}
                       for setting in ("off", "on")} for file in files}
    unstable = [file for file in files if len(variants[file]["off"]) > 1 or len(variants[file]["on"]) > 1]
    print(f"SDFG files: {len(files)}; written differently by the same setting in another round (gt4py's lowering "
          f"varies between processes): {len(unstable)} {unstable[:4]}")
    shared = [file for file in files if variants[file]["on"] & variants[file]["off"]]
    print(f"written identically with and without the shortcut (in some round): {len(shared)} of {len(files)}")
    if len(shared) != len(files):
        sys.exit(1)


if __name__ == "__main__":
    main()
