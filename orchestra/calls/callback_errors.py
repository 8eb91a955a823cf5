"""An exception in a callback ends the call with that exception, and an MPI job with its message.

The compiled program calls a callback (a ``dace_inhibitor`` function: a halo
exchange, a getter) through ctypes, and ctypes cannot pass an exception back
through C: it prints ``Exception ignored on calling ctypes callback
function`` and the program carries on with whatever the callback returned
(into the next halo exchange, here). Python mode would have stopped at the
raise.

Every callback of a loaded program goes through a :class:`CallbackGuard`:

* the first exception is kept, with the callback's name; the rest of the
  compiled call runs without calling Python again (each later callback
  returns 0 at once), and when the library returns, the original exception
  is raised from the orchestrated call, with a note naming the callback.
  The model's arrays hold what the rest of the compiled call computed.
* under MPI with more than one rank, the job cannot wait for the call to
  end: the other ranks may be blocked in an exchange this rank will not
  join. The failing rank reports the exception and calls ``MPI_Abort``
  through :func:`orchestra.comm.abort.report_and_abort`, as an uncaught
  exception is reported: every line prefixed with the rank, rank 0 at once
  and the other ranks only after a grace period, so that a callback raising
  on every rank ends the job with one message, not one per rank.
* a compiled loop whose exit depends on a callback's result could spin
  forever once callbacks return 0: after :data:`SPIN_LIMIT` skipped
  callbacks the process writes the message and exits with status 1.
"""

from __future__ import annotations

import os
import sys
import traceback
from typing import Any, Callable, Optional

#: What a build records beside its library: callback name -> ``file:line`` of its call sites (:func:`callback_lines`).
CALLBACK_SITES_FILE = "callback_sites.json"
#: Callbacks skipped after a failure before the process gives up on the call ending (a spinning loop).
SPIN_LIMIT = 1_000_000


class CallbackGuard:
    """Keeps the first exception raised by any callback of one loaded program (see the module)."""

    def __init__(self, program: str) -> None:
        self.program = program
        self._error: Optional[BaseException] = None
        self._skipped = 0

    def wrap(self, name: str, function: Callable) -> Callable:
        """``function`` as the compiled program calls it: exceptions kept, later calls skipped."""

        def guarded(*args: Any) -> Any:
            if self._error is not None:
                self._skipped += 1
                if self._skipped > SPIN_LIMIT:
                    _exit_with(self._message(), 1)
                return 0
            try:
                return function(*args)
            except BaseException as error:  # noqa: BLE001 (handed back to the caller of the program)
                self._fail(name, error)
                return 0

        guarded.__wrapped__ = function  # type: ignore[attr-defined]
        return guarded

    def _fail(self, name: str, error: BaseException) -> None:
        error.add_note(
            f"(raised in the callback {name}, called by the compiled program {self.program}; the rest of that "
            "call ran without calling Python again)"
        )
        self._error = error
        world = _mpi_world()
        if world is not None and world.Get_size() > 1:
            from orchestra.comm.abort import report_and_abort

            report_and_abort(error, world)

    def _message(self) -> str:
        return "".join(traceback.format_exception(self._error)) if self._error else ""

    def raise_pending(self) -> None:
        """Raise the exception a callback raised during the call that just returned, if any."""
        error, self._error, self._skipped = self._error, None, 0
        if error is not None:
            raise error


def callback_labels(resolver: Any) -> dict[str, str]:
    """Callback name -> how messages and timings name it: the call as written (``self.halo.fill``).

    DaCe names a nested component's callback in its caller's closure by the
    component's own name for it (``self_halo_fill_0``); the expression as
    written is found in the component's closure, by the callable itself.
    """
    if resolver is None:
        return {}
    written: dict[int, str] = {}
    pending = [resolver]
    while pending:
        closure = pending.pop()
        for expression, function, nested in closure.callbacks.values():
            if not nested and "." in str(expression):
                written.setdefault(id(function), str(expression))
        pending.extend(child for _call, child in getattr(closure, "nested_closures", ()))
    return {name: written.get(id(function), _function_name(name, function))
            for name, (_expression, function, _nested) in resolver.callbacks.items()}


def callback_lines(sdfg: Any) -> dict[str, str]:
    """Resolver callback name -> ``file:line`` of each call site in the loaded program (from its tasklets)."""
    import re

    from dace import dtypes
    from dace.sdfg import nodes

    symbols = [name for name, kind in sdfg.symbols.items() if isinstance(kind, dtypes.callback)]
    if not symbols:
        return {}
    calls = re.compile(r"\b(" + "|".join(re.escape(name) for name in symbols) + r")\s*\(")
    lines: dict[str, list[str]] = {}
    for node, _parent in sdfg.all_nodes_recursive():
        info = getattr(node, "debuginfo", None) if isinstance(node, nodes.Tasklet) else None
        if info is None or not info.filename:
            continue
        for symbol in calls.findall(node.code.as_string):
            name = sdfg.callback_mapping.get(symbol, symbol)
            where = f"{info.filename.rsplit('/', 1)[-1]}:{info.start_line}"
            if where not in lines.setdefault(name, []):
                lines[name].append(where)
    return {name: ", ".join(sorted(found)) for name, found in lines.items()}


def _function_name(name: str, function: Callable) -> str:
    from orchestra.frontend.callback_arguments import flattened

    target = flattened(function).get("func", function)
    target = getattr(target, "__func__", target)
    return getattr(target, "__qualname__", name)


def _mpi_world() -> Any:
    """MPI's world communicator if mpi4py is in use and initialized (never initializes MPI itself)."""
    module = sys.modules.get("mpi4py.MPI")
    if module is None or not module.Is_initialized() or module.Is_finalized():
        return None
    return module.COMM_WORLD


def _exit_with(message: str, status: int) -> None:
    sys.stderr.write(message)
    sys.stderr.write("the compiled program kept calling callbacks after one failed; ending the process\n")
    sys.stderr.flush()
    os._exit(status)
