"""DaCe's walk over an SDFG's data descriptors done once per SDFG while connector types are inferred.

DaCe's code generation infers connector types three times
(``dace.sdfg.infer_types.infer_connector_types``), and for every nested SDFG
node it widens the node's mapped symbols (``widen_mapped_symbols``), which asks
for every symbol the node sees: ``SDFGState.sdfg_symbols``, a walk over the
free symbols of *every* data descriptor of the SDFG that holds the node. A
program's top level holds most nested SDFG nodes and most descriptors, so
that walk is quadratic in the program's size: on the FV3-size benchmark, 9 s
of 137 s of code generation at 40 stencils and 167 s of 943 s at 120 (under
cProfile), the one term of code generation that grew faster than the program.

Inside :func:`inference_with_symbols_once` an SDFG's ``sdfg_symbols`` is
computed once and handed out as a copy, for as long as its symbols (names and
types) and its number of descriptors stay the same; anything else computes it
again. The same holds for the symbols defined at a state
(``SDFGState.symbols_defined_at_state``, asked by ``symbols_defined_at`` once
per nested SDFG node: a walk back over the inter-state edges of its region,
again quadratic where one region holds many states with nested SDFGs; 10% of
code generation at 324 stencils). Inference only changes connector types
and, in widening, a nested SDFG's own symbols (then that SDFG's entries are
recomputed), so every caller
gets what DaCe would have computed: the generated code is the same (compared
on the benchmark and the dycore). A work-around for DaCe 2.0.0b1; the method
is restored on leaving.
"""

from __future__ import annotations

import collections
import contextlib
import threading
from typing import Any, Iterator

from orchestra.toolchain.stand_in import standing_in

_lock = threading.RLock()
_active = [False]


@contextlib.contextmanager
def inference_with_symbols_once() -> Iterator[None]:
    """Within the block, DaCe's connector type inference walks each SDFG's descriptors once (module docstring)."""
    from dace.sdfg import infer_types
    from dace.sdfg.state import SDFGState

    with _lock:  # one code generation at a time patches DaCe; a nested use leaves the outer one in charge
        if _active[0]:
            yield
            return
        _active[0] = True
        infer, descriptor_symbols = infer_types.infer_connector_types, SDFGState.sdfg_symbols
        at_state = SDFGState.symbols_defined_at_state
        memo: dict[int, tuple[Any, tuple, dict]] = {}  # id(SDFG) -> (the SDFG, what it had, its symbols)
        state_memo: dict[int, tuple[Any, tuple, dict]] = {}  # id(state) -> (the state, what its SDFG had, ...)
        depth = [0]

        def remembered(self: Any) -> dict:
            if not depth[0]:
                return descriptor_symbols(self)
            return _recalled(memo, self.sdfg, self.sdfg, lambda: descriptor_symbols(self))

        def remembered_at_state(self: Any, *, sdfg_symbols: Any = None, region_updates: Any = None) -> dict:
            if not depth[0] or sdfg_symbols is not None or region_updates is not None:
                return at_state(self, sdfg_symbols=sdfg_symbols, region_updates=region_updates)
            return _recalled(state_memo, self, self.sdfg, lambda: at_state(self))

        def inferring(sdfg: Any, *args: Any, **kwargs: Any) -> Any:
            depth[0] += 1
            try:
                return infer(sdfg, *args, **kwargs)
            finally:
                depth[0] -= 1
                if not depth[0]:
                    memo.clear()  # between inferences the program may change
                    state_memo.clear()

        try:
            with standing_in(infer_types, {"infer_connector_types": inferring}), \
                    standing_in(SDFGState, {"sdfg_symbols": remembered, "symbols_defined_at_state": remembered_at_state}):
                yield
        finally:
            _active[0] = False


def _recalled(memo: dict, owner: Any, sdfg: Any, compute: Any) -> dict:
    """A copy of ``compute()`` for ``owner`` (an SDFG or a state), computed again once ``sdfg`` (the SDFG
    itself, or the state's) changed its symbols or number of descriptors."""
    seen = (tuple(sdfg.symbols.items()), len(sdfg.arrays))
    entry = memo.get(id(owner))
    if entry is None or entry[0] is not owner or entry[1] != seen:
        entry = memo[id(owner)] = (owner, seen, compute())
    return collections.OrderedDict(entry[2])
