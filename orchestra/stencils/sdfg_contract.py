"""gt4py's stencil SDFG restated the way DaCe 2.0.0b1 reads a nested SDFG.

gt4py 1.1.12 builds a stencil's SDFG for DaCe 1.x. DaCe 2.0.0b1 takes a
nested SDFG's connector to be the caller's container itself, indexed as the
caller indexes it and of the caller's type. Two things differ:

* **Windows.** gt4py nests the stencil's computation with connectors that
  describe the window its outer memlet selects (the field from the
  stencil's origin on), the memlets inside relative to it. Read DaCe 2's way,
  the indices lose the origin (wrong numbers: 340 of 360 values differed in
  the example model with regions) or the nested SDFG is never inlined.
  DaCe's ``convert_legacy_nested_sdfgs`` moves the origin into the inner
  memlets (:func:`orchestra.stencils.restated.restate`, kept for later builds).
* **Scalar types.** A program's ``scale`` is an ``int64`` when the call passed
  ``2``; the stencil declares ``coefficient: float``. Nested, ``coefficient``
  becomes a view of the ``int64`` and the generated code reinterprets its
  bytes (it does not compile: ``cannot convert 'double*' to 'const
  int64_t*'``). Here (:func:`scalars_as_given`) the stencil's SDFG receives each scalar with the type
  it is given and converts it once, on entry, into a transient of its
  declared type: the conversion Python makes with ``float(2)`` or
  ``float(np.float32(x))``, exact for every value the fast path accepts
  (integers up to 2**53, float32, bool). gt4py itself refuses such a call
  stencil by stencil (``TypeError``); an orchestrated program computes with
  the converted value, as a ``float``-annotated parameter would.
"""

from __future__ import annotations

import copy
from typing import Any, Mapping


def scalars_as_given(sdfg: Any, given: Mapping[str, Any]) -> list[str]:
    """Retype each scalar parameter of ``sdfg`` that ``given`` (name -> DaCe descriptor) types otherwise.

    Returns the names converted on entry.
    """
    from dace import data

    converted = []
    written = _written(sdfg)  # a scalar the stencil writes back is left to DaCe (gt4py stencils write none)
    for name, passed in given.items():
        own = sdfg.arrays.get(name)
        if not isinstance(own, data.Scalar) or own.transient or not isinstance(passed, data.Scalar):
            continue
        if passed.dtype != own.dtype and name not in written:
            _convert_on_entry(sdfg, name, passed.dtype)
            converted.append(name)
    return converted


def _written(sdfg: Any) -> set[str]:
    from dace.sdfg import nodes

    return {
        node.data
        for state in sdfg.states()
        for node in state.nodes()
        if isinstance(node, nodes.AccessNode) and state.in_degree(node) > 0
    }


def _convert_on_entry(sdfg: Any, name: str, given: Any) -> None:
    """Rename the scalar ``name`` to a transient filled, in a new first state, from ``name`` of type ``given``."""
    from dace.memlet import Memlet
    from dace.utils import find_new_name

    own = sdfg.arrays[name]
    entry = copy.deepcopy(own)
    entry.dtype = given
    converted = find_new_name(f"{name}_as_{own.dtype.to_string()}", set(sdfg.arrays) | set(sdfg.symbols))
    own.transient = True  # first: DaCe's replace turns a read of a non-transient scalar into a constant
    sdfg.replace(name, converted)
    sdfg.add_datadesc(name, entry)
    cast = sdfg.add_state_before(sdfg.start_block, label=f"cast_{name}", is_start_block=True)
    tasklet = cast.add_tasklet(f"cast_{name}", {"given"}, {"converted"}, "converted = given")
    cast.add_edge(cast.add_read(name), None, tasklet, "given", Memlet(f"{name}[0]"))
    cast.add_edge(tasklet, "converted", cast.add_write(converted), None, Memlet(f"{converted}[0]"))
