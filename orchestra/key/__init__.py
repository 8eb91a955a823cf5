"""What a build depends on, at every depth of the call tree, and how it is named and compared.

The contract: :func:`~orchestra.key.inputs.collect_build_inputs` returns a
plain, canonical dict of everything that changes a program's generated code,
without parsing it (DaCe's closure resolution only); its fingerprint is the
cache key and the dict is the build's manifest. Every input is named by what
the program reads, never by where the source says it:

* sources by ``module.Qualname``, normalised (comments, docstrings and
  formatting do not count: :func:`~orchestra.key.call_tree.source_digest`);
* arrays and scalars by their access path from the call's arguments and
  ``self`` (``self.dt``, ``state.tracers['qc']``), also those of loops DaCe
  unrolls (never a name carrying a source line);
* callees by their identity (a stencil's gt4py content id, origin, domain),
  each call-tree node under its call path (``Tendencies.__call__/Diffusion.__call__``);
* arrays by layout (:mod:`~orchestra.key.array_like`, one description of any
  array or container), folded values by value (:mod:`~orchestra.key.folded_values`:
  compared again on every call).

A difference in any input means another program: ``BuildAndRun`` builds it,
``Run`` refuses it naming the differences (:mod:`orchestra.cache.causes`).
This package imports nothing from ``pipeline``, ``calls`` or ``orchestrate``.
"""
