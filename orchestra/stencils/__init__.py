"""Stencils as orchestrated code calls them: frozen origin and domain, lowered once, checked as Python mode checks.

The contract: a :class:`~orchestra.stencils.frozen.FrozenStencil` computes in
every mode what gt4py's stencil computes; called from orchestrated code it is
inlined (its SDFG, from gt4py's cache, lowered ahead where a build needs it:
:mod:`~orchestra.stencils.stencil_cache`, and restated for the call once:
:mod:`~orchestra.stencils.restated`), with its arguments checked while
parsing as ``Python`` mode would check them (:mod:`~orchestra.stencils.arguments`);
called from a split build's Python body it runs as a one-stencil program
(:mod:`~orchestra.stencils.python_body`). Each stencil lowers its own copy of
its definition, so one definition with different externals gives different
stencils.
"""
