"""Model source as it is written, made parseable by DaCe: rewrites of each function before DaCe reads it.

Model code written for NDSL and Pace uses Python that DaCe's frontend refuses
although its meaning is fixed when the program is parsed: a list of stencils
indexed by a loop variable, a local alias of a component (``g = self.grid``),
a callback whose result type is written on the callback, not on the variable
receiving it. orchestra rewrites the syntax tree of every function DaCe
parses for it (the orchestrated method and every callee DaCe parses in turn,
at any depth) into the equivalent form DaCe accepts, once, before DaCe's own
preprocessing:

- :mod:`~orchestra.frontend.dead_branches`: a branch ruled out by a flag
  fixed when the function is parsed (``if self.call_checkpointer:`` False)
  is emptied, its condition kept (folded and keyed as before): DaCe's
  closure resolution no longer resolves calls that Python never makes.
- :mod:`~orchestra.frontend.base_calls`: ``super().m(...)`` and
  ``Base.m(self, ...)`` call the base's function bound to the object.
- :mod:`~orchestra.frontend.rebinding` and :mod:`~orchestra.frontend.element_reads`:
  a name bound again is a new variable (``x = x * 2.0`` leaves the caller's
  ``x``), an element read into a name is a copy, and a tuple assignment
  reads its right-hand side first, as in Python.
- :mod:`~orchestra.frontend.returns`: ``a, b = self.component(...)`` whose
  returns name the component's own arrays or its arguments binds ``a, b`` to
  those arrays (DaCe would copy them; a caller writing into them changed a
  copy).
- :mod:`~orchestra.frontend.branch_aliases`: a local bound to an object in
  every branch of an ``if`` and used after it takes what follows into each
  branch, where it is an alias of that branch's object.
- :mod:`~orchestra.frontend.aliases`: a local bound once to an attribute path
  (``st = self.stencils[n]``) is replaced by that path where it is used.
- :mod:`~orchestra.frontend.loops`: a loop whose body indexes a compile-time
  collection (a list or dict of stencils, components or arrays held by the
  model) with the loop variable is unrolled (``dace.unroll``); other loops
  stay loops.
- :mod:`~orchestra.frontend.closure_arrays` (not a rewrite: it wraps DaCe's
  closure resolution for the same span): objects over the same memory, such
  as a ``Quantity`` and its ``.data``, are one array of the program.
- :mod:`~orchestra.frontend.callbacks`: a callback (a decorated function, such
  as a ``dace_inhibitor`` method) used in an expression or returning a tuple
  gets its result type from its return annotation; a result of unknown type
  is refused at parse time, naming the line and the annotation to add.
- :mod:`~orchestra.frontend.numpy_calls` (a check, not a rewrite): NumPy
  calls the compiled program would compute otherwise than NumPy (``np.exp``,
  ``np.sum`` of run-time values) are refused, naming the line and the fix.
- :mod:`~orchestra.frontend.array_attributes` (a check): an attribute of a
  run-time array argument that DaCe would read as the whole array
  (``q.field`` of a ``Quantity`` passed in) is refused.

The contract: a rewrite changes only syntax DaCe cannot parse, into code with
the same meaning in Python. What the rewritten program folds in (an unrolled
loop's bound, each list element it calls) is read by DaCe's closure
resolution like any other value read through ``self``, so it enters the
cache key and is compared on every call (:mod:`orchestra.key.folded_values`);
the rewrites are orchestra's code, keyed with orchestra's sources. The
original source stays what the key's source digest reads, and error
messages name the model's own file and lines (line numbers are kept).

:func:`source_rewrites` installs the rewrites into DaCe's preprocessor for
the duration of a ``with`` block (:func:`orchestra.toolchain.dace_settings`
enters it); outside it, DaCe is unchanged.
"""

from orchestra.frontend.hook import source_rewrites

__all__ = ["source_rewrites"]
