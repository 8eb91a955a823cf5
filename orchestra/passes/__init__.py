"""SDFG passes of the optimize stage, one sub-package or module per family.

Each pass runs alone on an SDFG (tests do) and says what it reads and changes:

- :mod:`.simplify`: DaCe's simplify pipeline minus :data:`~.simplify.SIMPLIFY_SKIP`;
- :mod:`.memory`: lifetimes and storages of transients (persistent, pooled), the memory report;
- :mod:`.cpu`: schedule passes of CPU builds, by name (region map splitting, one OpenMP level, the
  fusion passes of :mod:`.fusion`: vertical merging and scratch planes by default, row blocking opt-in);
- :mod:`.stencil_labels`: which gt4py stencils a kernel runs (the debug checks and the kernel profile);
- :mod:`.gpu`: the GPU pass (kernels, device storages, host callbacks);
- :mod:`.debug`: debug checks injected after every kernel (``ORCHESTRA_DEBUG``).

The optimize stage (:func:`orchestra.pipeline.stages.optimize`) runs them in
this order: simplify, expand library nodes, simplify, CPU passes or the GPU
pass, memory policy, debug checks.
"""
