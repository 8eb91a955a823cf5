"""A cubed-sphere shallow-water dynamical core in gt4py, its test cases and its driver.

Run it with ``mpirun -n 6*n*n python -m driver CONFIG`` (or ``scripts/run.sh``).
The scheme is described in ``docs/model.md``; the layout of the package:

* :mod:`driver.grid`: per-rank geometry of the gnomonic cubed sphere, halos included;
* :mod:`driver.state`: the prognostic state (h, u, v) and static fields;
* :mod:`driver.stencils`: the gtscript stencil definitions, grouped by concern;
* :mod:`driver.components`: orchestrated components calling those stencils;
* :mod:`driver.dycore`: :class:`~driver.dycore.DynamicalCore`, one model step;
* :mod:`driver.testcases`, :mod:`driver.diagnostics`: Williamson et al. (1992) cases and norms;
* :mod:`driver.config`, :mod:`driver.output`, :mod:`driver.simulation`: the run.
* :mod:`driver.host_copies`: host code reading and writing a state that lives on a GPU.
"""
