"""The GPU pass family: [optimized SDFG] -> [SDFG whose computations are CUDA kernels].

Reads: a simplified SDFG with expanded library nodes. Changes: schedules
(top-level maps become kernels), storages (transients move to device memory;
host data a callback touches stays on the host), and collapses gt4py's
vertical/horizontal map nests into one 3-D map. Never changes arithmetic.
Details and the order of its steps: :mod:`.transform`.
"""

from orchestra.passes.gpu.transform import GpuResult, to_gpu

__all__ = ["GpuResult", "to_gpu"]
