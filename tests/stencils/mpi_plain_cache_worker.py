"""Every rank compiles the same plain gt4py stencil at once into one fresh ``GT_CACHE_ROOT`` (issue 56).

Run under ``mpirun`` by ``tests/stencils/test_gt4py_cache_mpi.py``:
``python mpi_plain_cache_worker.py OUTPUT_FOLDER [with-orchestra|without-orchestra]``.
``GT_CACHE_ROOT`` is set by the caller. After a barrier every rank defines and
builds the stencil, runs it, and writes its result to
``OUTPUT_FOLDER/rank<N>.npy``; a rank whose build fails writes the error to
``OUTPUT_FOLDER/rank<N>.error`` and exits 1.
"""

from __future__ import annotations

import sys
import traceback
from pathlib import Path

import numpy as np
from mpi4py import MPI

folder, variant = Path(sys.argv[1]), sys.argv[2]
if variant == "with-orchestra":
    import orchestra  # noqa: F401  (installs the per-stencil build lock into gt4py)

from gt4py import storage  # noqa: E402
from gt4py.cartesian import gtscript  # noqa: E402
from gt4py.cartesian.gtscript import PARALLEL, Field, computation, interval  # noqa: E402


def laplacian(q: Field[float], out: Field[float]):
    with computation(PARALLEL), interval(...):
        out = q[1, 0, 0] + q[-1, 0, 0] + q[0, 1, 0] + q[0, -1, 0] - 4.0 * q


rank = MPI.COMM_WORLD.Get_rank()
MPI.COMM_WORLD.Barrier()
try:
    stencil = gtscript.stencil(backend="dace:cpu", definition=laplacian)
    q = storage.from_array(np.arange(8 * 8 * 3, dtype=float).reshape(8, 8, 3) ** 1.5, backend="dace:cpu")
    out = storage.zeros((8, 8, 3), float, backend="dace:cpu")
    stencil(q, out, origin=(1, 1, 0), domain=(6, 6, 3))
    np.save(folder / f"rank{rank}.npy", np.asarray(out))
except BaseException:  # setuptools ends a failed compile with SystemExit
    (folder / f"rank{rank}.error").write_text(traceback.format_exc())
    sys.exit(1)
