"""Field types used in the stencil signatures."""

import numpy as np
from gt4py.cartesian import gtscript

#: A cell-centred 3-D field ``[i, j, k]``.
FloatField = gtscript.Field[np.float64]

#: A 2-D field ``[i, j]`` (geometry, surface height, Coriolis parameter).
FloatFieldIJ = gtscript.Field[gtscript.IJ, np.float64]
