"""gtscript stencil definitions of the shallow-water core, grouped by concern.

* :mod:`.wind`: (u, v) in each cell's basis to Cartesian vectors;
* :mod:`.column`: the vertical sweep (free surface of the layer stack) and the
  Bernoulli function;
* :mod:`.fluxes`: face values and fluxes, with tile-edge regions;
* :mod:`.tendencies`: mass-flux divergence and vector-invariant momentum tendency;
* :mod:`.diffusion`: Laplacian with cube-corner regions, and the del-4 tendency;
* :mod:`.timestep`: the Runge-Kutta stage updates.

Definitions are plain functions; components wrap them in
:class:`orchestra.FrozenStencil` with their origin, domain and externals.
Region externals (``west``, ``east``, ``south``, ``north``) come from
:func:`driver.regions.edge_externals`.
"""
